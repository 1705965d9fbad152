#pragma once
// The GPU a run uses: its properties (CUDA runtime), its driver (NVML) and the peak rates
// the tool judges kernels against.
#include <optional>
#include <string>
#include <string_view>

#include "src/json.hpp"

namespace tkprobe {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  long long l2_bytes = 0;
  long long smem_per_sm = 0;
  long long smem_per_block_optin = 0;
  int sm_clock_max_mhz = 0;  // the runtime's peak SM clock
  int mem_clock_mhz = 0;
  int mem_bus_bits = 0;
  double power_limit_w = 0;  // NaN without NVML
  std::string pci_bus_id;
  std::string uuid;  // "GPU-" and the 16-byte UUID as nvidia-smi prints it: which card, not which model
  std::string driver;   // NVML's driver version, or "unavailable"
  int driver_api = 0;   // cudaDriverGetVersion
  int runtime_api = 0;  // cudaRuntimeGetVersion

  int cc() const { return cc_major * 10 + cc_minor; }
};

// Number of CUDA devices; throws NoDeviceError "no CUDA device: <CUDA error>" when there is none.
int cuda_device_count();

// A card's 16-byte UUID (cudaDeviceProp::uuid) as nvidia-smi writes it: GPU-8-4-4-4-12 hex digits.
std::string uuid_text(const char (&bytes)[16]);

// Properties of device `index`; throws NoDeviceError naming the valid indices when absent.
DeviceInfo query_device(int index);

Json to_json(const DeviceInfo& d);

// Datasheet dense tensor-core peaks in TFLOP/s (TOP/s for int8); 0: the part has no such type.
struct DatasheetPeaks {
  std::string part;  // which datasheet row matched
  double bf16 = 0, fp16 = 0, tf32 = 0, fp8 = 0, int8 = 0;
};
// The datasheet row for a GPU name (src/datasheets.cpp: which GPUs, and whose figures); empty when
// the tool has no row for it (the % of datasheet figures then read null; the clock peak needs no datasheet).
std::optional<DatasheetPeaks> datasheet_peaks(std::string_view device_name);

// Dense tensor-core FLOP (int8: OP) per clock per SM on device `d`, from its architecture (sm_80 to
// sm_120; GeForce parts accumulate fp32 at half rate), by a probe's dtype (bf16, fp16, tf32, fp8 or
// e4m3/e5m2, int8 or s8); 0 where the tool has no figure for its architecture or type.
int flop_per_clock_per_sm(const DeviceInfo& d, std::string_view dtype);

// The same on Hopper.
int hopper_flop_per_clock_per_sm(std::string_view dtype);

// The GPU's dense peaks at its maximum SM clock, from its SMs and architecture: what % of peak means
// where the datasheet table has no row. Empty where the architecture's rates are unknown.
std::optional<DatasheetPeaks> clock_peaks(const DeviceInfo& d);

// SMs x FLOP/clk/SM x clock, in TFLOP/s.
double clock_peak_tflops(int sms, int flop_per_clock_per_sm, double sm_clock_mhz);

// The HBM ceiling every streaming probe compares to: 2 transfers per memory clock x the bus
// width, in TB/s.
double hbm_ceiling_tbps(const DeviceInfo& d);

}  // namespace tkprobe
