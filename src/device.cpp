#include "src/device.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "src/errors.hpp"
#include "src/nvml.hpp"

namespace tkprobe {

int cuda_device_count() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    throw NoDeviceError(fmt::format("no CUDA device: {} ({})", cudaGetErrorString(status), cudaGetErrorName(status)));
  }
  if (count == 0) throw NoDeviceError("no CUDA device: the driver reports 0 devices");
  return count;
}

std::string uuid_text(const char (&bytes)[16]) {
  std::string hex = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) hex += '-';
    hex += fmt::format("{:02x}", static_cast<unsigned char>(bytes[i]));
  }
  return hex;
}

static int attribute(cudaDeviceAttr attr, int index) {
  int value = 0;
  TK_CUDA(cudaDeviceGetAttribute(&value, attr, index));
  return value;
}

DeviceInfo query_device(int index) {
  const int count = cuda_device_count();
  if (index < 0 || index >= count) {
    throw NoDeviceError(fmt::format("device {} not present: this machine has {} CUDA device(s) (valid: --device 0{})",
                                    index, count, count > 1 ? fmt::format("..{}", count - 1) : ""));
  }
  cudaDeviceProp p{};
  TK_CUDA(cudaGetDeviceProperties(&p, index));
  DeviceInfo d;
  d.index = index;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sms = p.multiProcessorCount;
  d.l2_bytes = p.l2CacheSize;
  d.smem_per_sm = static_cast<long long>(p.sharedMemPerMultiprocessor);
  d.smem_per_block_optin = static_cast<long long>(p.sharedMemPerBlockOptin);
  d.sm_clock_max_mhz = attribute(cudaDevAttrClockRate, index) / 1000;
  d.mem_clock_mhz = attribute(cudaDevAttrMemoryClockRate, index) / 1000;
  d.mem_bus_bits = p.memoryBusWidth;
  char bus[32] = {};
  TK_CUDA(cudaDeviceGetPCIBusId(bus, sizeof bus, index));
  d.pci_bus_id = bus;
  d.uuid = uuid_text(p.uuid.bytes);
  const auto& nvml = Nvml::instance();
  d.driver = nvml.driver_version();
  d.power_limit_w = nvml.power_limit_w(d.pci_bus_id);
  TK_CUDA(cudaDriverGetVersion(&d.driver_api));
  TK_CUDA(cudaRuntimeGetVersion(&d.runtime_api));
  return d;
}

// Peaks as a report gives them: `label` (the datasheet part, or how the clock peak is derived), then
// each type the GPU has; null where there are none.
static Json peaks_json(const std::optional<DatasheetPeaks>& p, const char* label) {
  if (!p) return nullptr;
  Json j{{label, p->part}};
  const std::pair<const char*, double> peaks[] = {{"bf16_tflops", p->bf16},
                                                  {"fp16_tflops", p->fp16},
                                                  {"tf32_tflops", p->tf32},
                                                  {"fp8_tflops", p->fp8},
                                                  {"int8_tops", p->int8}};
  for (const auto& [key, value] : peaks) {
    if (value > 0) j[key] = value;
  }
  return j;
}

Json to_json(const DeviceInfo& d) {
  Json power = std::isnan(d.power_limit_w) ? Json(nullptr) : Json(d.power_limit_w);
  return {{"index", d.index},
          {"name", d.name},
          {"cc", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
          {"sms", d.sms},
          {"l2_bytes", d.l2_bytes},
          {"smem_per_sm", d.smem_per_sm},
          {"smem_per_block_optin", d.smem_per_block_optin},
          {"sm_clock_max_mhz", d.sm_clock_max_mhz},
          {"mem_clock_mhz", d.mem_clock_mhz},
          {"mem_bus_bits", d.mem_bus_bits},
          {"power_limit_w", power},
          {"pci_bus_id", d.pci_bus_id},
          {"uuid", d.uuid},
          {"datasheet", peaks_json(datasheet_peaks(d.name), "part")},
          {"clock_peaks", peaks_json(clock_peaks(d), "source")}};
}

namespace {

constexpr int kHopperCc = 90;

// FLOP per clock per SM, dense, from NVIDIA's architecture whitepapers and datasheets; each row
// reproduces its parts' datasheet peaks at their boost clocks (tests/host/test_device.cpp).
struct ArchRates {
  int cc_first, cc_last;
  int bf16, tf32, fp8, int8;  // fp16 runs at bf16's rate
};
constexpr ArchRates kArchRates[] = {
    {80, 80, 2048, 1024, 0, 4096},         // A100
    {86, 87, 1024, 512, 0, 2048},          // A10, A40, RTX 30
    {89, 89, 1024, 512, 2048, 2048},       // L4, L40S, RTX 40
    {90, 90, 4096, 2048, 8192, 8192},      // H100, H200
    {100, 103, 8192, 4096, 16384, 16384},  // B200, B300
    {120, 121, 1024, 512, 2048, 2048},     // RTX 50, RTX PRO Blackwell
};

// Dense tensor-core FLOP (int8: OP) per clock per SM of compute capability `cc` by `type` (bf16, fp16,
// tf32, fp8 or int8, as rate_type names it), accumulating in fp32 (int8 in int32); 0 where the
// architecture has no such type or the table no row. GeForce parts run fp32 accumulation at half rate.
int tensor_flop_per_clock_per_sm(int cc, std::string_view type, bool geforce) {
  const auto arch =
      std::ranges::find_if(kArchRates, [&](const ArchRates& a) { return a.cc_first <= cc && cc <= a.cc_last; });
  if (arch == std::end(kArchRates)) return 0;
  const int halved = geforce ? 2 : 1;  // fp32 accumulation at half rate; int32 at full
  if (type == "bf16" || type == "fp16") return arch->bf16 / halved;
  if (type == "tf32") return arch->tf32 / halved;
  if (type == "fp8") return arch->fp8 / halved;
  return arch->int8;
}

// A probe's dtype as the rate table names its type: e4m3 and e5m2 are fp8, s8 is int8.
std::string_view rate_type(std::string_view dtype) {
  if (dtype == "e4m3" || dtype == "e5m2") return "fp8";
  if (dtype == "s8") return "int8";
  if (dtype == "bf16" || dtype == "fp16" || dtype == "tf32" || dtype == "fp8" || dtype == "int8") return dtype;
  throw UsageError(fmt::format("unknown dtype '{}' (valid: bf16, fp16, tf32, e4m3, e5m2, s8)", dtype));
}

bool is_geforce(const DeviceInfo& d) { return d.name.find("GeForce") != std::string::npos; }

}  // namespace

int hopper_flop_per_clock_per_sm(std::string_view dtype) {
  return tensor_flop_per_clock_per_sm(kHopperCc, rate_type(dtype), false);
}

int flop_per_clock_per_sm(const DeviceInfo& d, std::string_view dtype) {
  return tensor_flop_per_clock_per_sm(d.cc(), rate_type(dtype), is_geforce(d));
}

std::optional<DatasheetPeaks> clock_peaks(const DeviceInfo& d) {
  const auto peak = [&](std::string_view dtype) {
    return clock_peak_tflops(d.sms, flop_per_clock_per_sm(d, dtype), d.sm_clock_max_mhz);
  };
  if (peak("bf16") == 0) return std::nullopt;
  const std::string source =
      fmt::format("clock-derived: {} SMs x {} bf16 FLOP/clk/SM (sm_{}{}) x {} MHz", d.sms,
                  flop_per_clock_per_sm(d, "bf16"), d.cc(), is_geforce(d) ? ", GeForce" : "", d.sm_clock_max_mhz);
  return DatasheetPeaks{source, peak("bf16"), peak("fp16"), peak("tf32"), peak("fp8"), peak("int8")};
}

double clock_peak_tflops(int sms, int flop_per_clock_per_sm, double sm_clock_mhz) {
  return sms * static_cast<double>(flop_per_clock_per_sm) * sm_clock_mhz * 1e6 / 1e12;
}

double hbm_ceiling_tbps(const DeviceInfo& d) { return 2.0 * d.mem_clock_mhz * 1e6 * d.mem_bus_bits / 8 / 1e12; }

}  // namespace tkprobe
