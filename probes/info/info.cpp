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
  // Datasheet peaks, and the clock peak (SMs x FLOP/clk/SM of the architecture x the maximum SM
  // clock); under tensor load the clock falls below that, which the tensor probes measure in-kernel.
  // Where the datasheet table has no row, the clock peak is this GPU's peak, and a finding says so.
  void add_peaks(ProbeContext& ctx, Result& r) const {
    const DeviceInfo& d = ctx.device;
    const auto sheet = datasheet_peaks(d.name);
    const auto clock = clock_peaks(d);
    r.value(metric::datasheet, sheet ? Json(sheet->part) : Json("no datasheet row for this GPU"));
    add_rates(r, sheet, "peak");
    add_rates(r, clock, "clock_peak");
    if (!clock) {
      ctx.finding(name(), fmt::format("no tensor-core FLOP/clk/SM known for sm_{}: no clock peak", d.cc()));
    } else if (sheet) {
      ctx.finding(name(), fmt::format("the datasheet's {:.1f} TFLOP/s bf16 implies {:.0f} MHz on {} SMs; the maximum "
                                      "SM clock {} MHz would give {:.1f}",
                                      sheet->bf16, d.sm_clock_max_mhz * sheet->bf16 / clock->bf16, d.sms,
                                      d.sm_clock_max_mhz, clock->bf16));
    } else {
      ctx.finding(name(), fmt::format("no datasheet row for {}: % of peak is of the {} = {:.1f} TFLOP/s bf16", d.name,
                                      clock->part, clock->bf16));
    }
  }

  // PREFIX_<type>_tflops for each type the GPU has (0: none).
  static void add_rates(Result& r, const std::optional<DatasheetPeaks>& p, const char* prefix) {
    if (!p) return;
    const double values[] = {p->bf16, p->fp16, p->tf32, p->fp8, p->int8};
    for (int i = 0; i < 5; ++i) {
      if (values[i] > 0) r.value(fmt::format("{}_{}_tflops", prefix, kDtypes[i]), values[i]);
    }
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(Info);

}  // namespace tkprobe
