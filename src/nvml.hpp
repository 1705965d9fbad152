#pragma once
// NVML, loaded at run time (dlopen libnvidia-ml.so.1) so one binary starts on machines
// without a driver; there every reading is "unavailable" instead of a failure.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/json.hpp"

namespace tkprobe {

struct NvmlSample {
  bool valid = false;
  double sm_clock_mhz = 0, mem_clock_mhz = 0, power_w = 0, temperature_c = 0;
  std::uint64_t clock_event_reasons = 0;  // nvmlClocksEventReasons bitmask
};

// Clock-event reason bits, as nvml.h numbers them (nvmlClocksEventReason*).
std::vector<std::string> clock_event_reason_names(std::uint64_t mask);
// True when a reason means the clock was held down by power or heat (not idle, not a setting).
bool is_throttle(std::uint64_t mask);

class Nvml {
 public:
  static Nvml& instance();
  bool available() const { return available_; }
  const std::string& unavailable_reason() const { return why_; }

  std::string driver_version() const;
  // Readings for the GPU with this PCI bus id ("0000:3B:00.0", as cudaDeviceGetPCIBusId gives).
  NvmlSample sample(const std::string& pci_bus_id) const;
  double power_limit_w(const std::string& pci_bus_id) const;  // NaN when unknown
  // The GPU's energy counter (nvmlDeviceGetTotalEnergyConsumption); nullopt where it has none.
  std::optional<double> total_energy_j(const std::string& pci_bus_id) const;

 private:
  Nvml();
  void* device(const std::string& pci_bus_id) const;
  bool available_ = false;
  std::string why_;
  struct Api;
  Api* api_ = nullptr;
};

// Telemetry around one measurement: NVML before and after, plus the SM clock the timed kernel
// measured itself (clock64 against %globaltimer), which is the one a clock peak must use.
Json telemetry_json(const NvmlSample& before, const NvmlSample& after, double kernel_sm_clock_mhz);

}  // namespace tkprobe
