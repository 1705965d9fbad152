// info: the device in front of the user, and the peak rates every other probe is judged by.
#include <fmt/format.h>

#include <cmath>

#include "probes/info/metrics.hpp"
#include "src/nvml.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::info;  // this probe's metrics.json

namespace tkprobe {
namespace {

constexpr const char* kDtypes[] = {"bf16", "fp16", "tf32", "fp8", "int8"};

class Info final : public Probe {
 public:
  std::string name() const override { return "info"; }
  std::string summary() const override {
    return "The device: SMs, L2, shared memory, clocks, power, driver, and the peak rates the tool uses";
  }

  void run(ProbeContext& ctx) override {
    const DeviceInfo& d = ctx.device;
    const NvmlSample now = Nvml::instance().sample(d.pci_bus_id);
    Result r(name());
    r.value(metric::name, d.name)
        .value(metric::cc, fmt::format("{}.{}", d.cc_major, d.cc_minor))
        .value(metric::sms, d.sms)
        .value(metric::l2_mib, d.l2_bytes / 1048576.0)
        .value(metric::smem_per_sm_kib, d.smem_per_sm / 1024)
        .value(metric::smem_per_block_kib, d.smem_per_block_optin / 1024)
        .value(metric::sm_clock_max_mhz, d.sm_clock_max_mhz)
        .value(metric::sm_clock_now_mhz, now.valid ? Json(now.sm_clock_mhz) : Json("unavailable"))
        .value(metric::mem_clock_mhz, d.mem_clock_mhz)
        .value(metric::power_limit_w, std::isnan(d.power_limit_w) ? Json("unavailable") : Json(d.power_limit_w))
        .value(metric::driver, d.driver)
        .value(metric::cuda_driver_api, fmt::format("{}.{}", d.driver_api / 1000, d.driver_api % 1000 / 10))
        .value(metric::cuda_runtime, fmt::format("{}.{}", d.runtime_api / 1000, d.runtime_api % 1000 / 10));
    add_peaks(ctx, r);
    ctx.add(std::move(r));
  }

 private:
  // Datasheet peaks, and the clock peak (SMs x FLOP/clk/SM x clock) at the maximum SM clock;
  // under tensor load the clock falls below that, which the tensor probes measure in-kernel.
  void add_peaks(ProbeContext& ctx, Result& r) const {
    const DeviceInfo& d = ctx.device;
    const auto peaks = datasheet_peaks(d.name);
    r.value(metric::datasheet, peaks ? Json(peaks->part) : Json("no datasheet row for this GPU"));
    if (peaks) {
      const double values[] = {peaks->bf16, peaks->fp16, peaks->tf32, peaks->fp8, peaks->int8};
      for (int i = 0; i < 5; ++i) {
        if (values[i] > 0) r.value(fmt::format("peak_{}_tflops", kDtypes[i]), values[i]);  // 0: no such type
      }
    }
    if (d.cc_major != 9) return;  // FLOP/clk/SM below are Hopper's
    for (const char* dtype : kDtypes) {
      r.value(fmt::format("clock_peak_{}_tflops", dtype),
              clock_peak_tflops(d.sms, hopper_flop_per_clock_per_sm(dtype), d.sm_clock_max_mhz));
    }
    if (peaks) {
      const double implied_mhz = peaks->bf16 * 1e6 / (d.sms * hopper_flop_per_clock_per_sm("bf16"));
      ctx.finding(name(), fmt::format("the datasheet's {:.1f} TFLOP/s bf16 implies {:.0f} MHz on {} SMs; the maximum "
                                      "SM clock {} MHz would give {:.1f}",
                                      peaks->bf16, implied_mhz, d.sms, d.sm_clock_max_mhz,
                                      clock_peak_tflops(d.sms, 4096, d.sm_clock_max_mhz)));
    }
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(Info);

}  // namespace tkprobe
