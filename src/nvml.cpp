#include "src/nvml.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace tkprobe {
namespace {

// The NVML C ABI (nvml.h): every call returns nvmlReturn_t, 0 on success.
using nvmlDevice = void*;
constexpr int kClockSm = 1;   // NVML_CLOCK_SM
constexpr int kClockMem = 2;  // NVML_CLOCK_MEM
constexpr int kTempGpu = 0;   // NVML_TEMPERATURE_GPU

constexpr std::pair<std::uint64_t, const char*> kReasons[] = {
    {0x1, "gpu_idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
};
constexpr std::uint64_t kThrottleMask = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

template <class F>
F load(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

struct Nvml::Api {
  int (*init)();
  int (*by_pci)(const char*, nvmlDevice*);
  int (*clock)(nvmlDevice, int, unsigned*);
  int (*power)(nvmlDevice, unsigned*);
  int (*power_limit)(nvmlDevice, unsigned*);
  int (*temperature)(nvmlDevice, int, unsigned*);
  int (*reasons)(nvmlDevice, unsigned long long*);
  int (*driver)(char*, unsigned);
  int (*energy)(nvmlDevice, unsigned long long*);  // optional: Volta and newer, in mJ since the driver loaded
};

std::vector<std::string> clock_event_reason_names(std::uint64_t mask) {
  std::vector<std::string> names;
  for (const auto& [bit, name] : kReasons)
    if (mask & bit) names.emplace_back(name);
  return names;
}

bool is_throttle(std::uint64_t mask) { return (mask & kThrottleMask) != 0; }

Nvml& Nvml::instance() {
  static Nvml nvml;
  return nvml;
}

Nvml::Nvml() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    why_ = "libnvidia-ml.so.1 not found";
    return;
  }
  auto* api = new Api{
      load<int (*)()>(lib, "nvmlInit_v2"),
      load<int (*)(const char*, nvmlDevice*)>(lib, "nvmlDeviceGetHandleByPciBusId_v2"),
      load<int (*)(nvmlDevice, int, unsigned*)>(lib, "nvmlDeviceGetClockInfo"),
      load<int (*)(nvmlDevice, unsigned*)>(lib, "nvmlDeviceGetPowerUsage"),
      load<int (*)(nvmlDevice, unsigned*)>(lib, "nvmlDeviceGetEnforcedPowerLimit"),
      load<int (*)(nvmlDevice, int, unsigned*)>(lib, "nvmlDeviceGetTemperature"),
      load<int (*)(nvmlDevice, unsigned long long*)>(lib, "nvmlDeviceGetCurrentClocksEventReasons"),
      load<int (*)(char*, unsigned)>(lib, "nvmlSystemGetDriverVersion"),
      load<int (*)(nvmlDevice, unsigned long long*)>(lib, "nvmlDeviceGetTotalEnergyConsumption"),
  };
  if (!api->reasons) {  // drivers before 535 know only the older name
    api->reasons = load<int (*)(nvmlDevice, unsigned long long*)>(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
  }
  if (!api->init || !api->by_pci || !api->clock || !api->power || !api->power_limit || !api->temperature ||
      !api->reasons || !api->driver) {
    why_ = "libnvidia-ml.so.1 lacks an expected entry point";
    delete api;
    return;
  }
  if (const int rc = api->init(); rc != 0) {
    why_ = "nvmlInit failed with NVML error " + std::to_string(rc);
    delete api;
    return;
  }
  api_ = api;
  available_ = true;
}

void* Nvml::device(const std::string& pci_bus_id) const {
  nvmlDevice dev = nullptr;
  if (!available_ || api_->by_pci(pci_bus_id.c_str(), &dev) != 0) return nullptr;
  return dev;
}

std::string Nvml::driver_version() const {
  char text[96] = {};
  if (!available_ || api_->driver(text, sizeof text) != 0) return "unavailable";
  return text;
}

NvmlSample Nvml::sample(const std::string& pci_bus_id) const {
  NvmlSample s;
  nvmlDevice dev = device(pci_bus_id);
  if (!dev) return s;
  unsigned sm = 0, mem = 0, mw = 0, temp = 0;
  unsigned long long reasons = 0;
  s.valid = api_->clock(dev, kClockSm, &sm) == 0 && api_->clock(dev, kClockMem, &mem) == 0 &&
            api_->power(dev, &mw) == 0 && api_->temperature(dev, kTempGpu, &temp) == 0 &&
            api_->reasons(dev, &reasons) == 0;
  s.sm_clock_mhz = sm;
  s.mem_clock_mhz = mem;
  s.power_w = mw / 1000.0;
  s.temperature_c = temp;
  s.clock_event_reasons = reasons;
  return s;
}

std::optional<double> Nvml::total_energy_j(const std::string& pci_bus_id) const {
  nvmlDevice dev = device(pci_bus_id);
  unsigned long long mj = 0;
  if (!dev || !api_->energy || api_->energy(dev, &mj) != 0) return std::nullopt;
  return mj / 1000.0;
}

double Nvml::power_limit_w(const std::string& pci_bus_id) const {
  nvmlDevice dev = device(pci_bus_id);
  unsigned mw = 0;
  return dev && api_->power_limit(dev, &mw) == 0 ? mw / 1000.0 : std::nan("");
}

Json telemetry_json(const NvmlSample& before, const NvmlSample& after, double kernel_sm_clock_mhz) {
  Json t = Json::object();
  if (!std::isnan(kernel_sm_clock_mhz)) t["kernel_sm_clock_mhz"] = kernel_sm_clock_mhz;
  if (!before.valid || !after.valid) {
    t["nvml"] = "unavailable";
    t["throttled"] = false;
    t["reasons"] = Json::array();
    return t;
  }
  const auto range = [](double a, double b) { return Json::array({std::min(a, b), std::max(a, b)}); };
  const std::uint64_t reasons = before.clock_event_reasons | after.clock_event_reasons;
  t["sm_clock_mhz"] = range(before.sm_clock_mhz, after.sm_clock_mhz);
  t["power_w"] = range(before.power_w, after.power_w);
  t["temperature_c"] = range(before.temperature_c, after.temperature_c);
  t["throttled"] = is_throttle(reasons);
  t["reasons"] = clock_event_reason_names(reasons);
  return t;
}

}  // namespace tkprobe
