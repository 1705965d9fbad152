// smem-latency: shared-memory load-to-use latency by a dependent pointer chase.
//
// One thread follows a chain whose every word holds the shared address of the next, so each
// load waits for the one before. Several chase lengths are timed with clock64(); the slope of
// cycles against length is the latency, and the intercept is the fixed cost (clock reads,
// loop entry, the last load still in flight) that the slope leaves out. Both are reported.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>

#include "probes/measure/chain.hpp"
#include "probes/smem-latency/metrics.hpp"
#include "probes/smem-latency/smem_latency_kernels.hpp"
#include "src/device_buffer.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::smem_latency;  // this probe's metrics.json

namespace tkprobe {
namespace {

namespace sl = smem_latency;
constexpr double kMaxResidual = 0.02;  // cycles must be linear in chase length to within 2%

class SmemLatency final : public Probe {
 public:
  std::string name() const override { return "smem-latency"; }
  std::string summary() const override {
    return "Shared-memory load-to-use latency by dependent pointer chase (cycles and ns; expect ~30 cycles)";
  }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--stride", strides_,
                   "Chain strides in bytes, multiples of 4 below the footprint (default 4 128 1028)");
    cmd.add_option("--footprint", footprint_kib_, "Chain footprint in KiB of shared memory, 1..200 (default 16)")
        ->check(CLI::Range(1, 200));
  }
  void validate() const override {
    for (int s : strides_) {
      if (s <= 0 || s % 4 != 0 || s >= footprint_kib_ * 1024) {
        throw UsageError(
            fmt::format("--stride {}: give a multiple of 4 bytes from 4 to {} (below the {} KiB footprint)", s,
                        footprint_kib_ * 1024 - 4, footprint_kib_));
      }
    }
  }

  void run(ProbeContext& ctx) override {
    const auto words = static_cast<std::uint32_t>(footprint_kib_ * 1024 / 4);
    if (footprint_kib_ * 1024 > ctx.device.smem_per_block_optin) {
      throw UsageError(fmt::format("--footprint {} KiB exceeds this GPU's {} KiB of shared memory per block",
                                   footprint_kib_, ctx.device.smem_per_block_optin / 1024));
    }
    for (const auto addressing : {sl::Addressing::precomputed, sl::Addressing::indexed}) {
      std::vector<double> latencies, overheads;
      const auto note = [&](const Result& r) {
        latencies.push_back(r.metrics["latency_cycles"]["median"].get<double>());
        overheads.push_back(r.metrics["overhead_cycles"].get<double>());
      };
      for (int stride : strides_) {
        note(chase(ctx, addressing, chain::strided(words, static_cast<std::uint32_t>(stride / 4)),
                   {{"chain", "stride"}, {"stride_bytes", stride}, {"footprint_bytes", words * 4}}));
      }
      note(chase(ctx, addressing, chain::random_cycle(words, ctx.rng),
                 {{"chain", "random"}, {"footprint_bytes", words * 4}}));
      const auto lat = summarize(latencies), over = summarize(overheads);
      ctx.finding(name(), fmt::format("{} address: {} cycles per dependent load over {} chains (strides and a random "
                                      "cycle alike: shared memory has no locality to exploit); a fixed {} cycles per "
                                      "timed chase was left out through the slope",
                                      to_string(addressing), span_text(lat, 1), lat.n, span_text(over, 0)));
    }
  }

 private:
  std::vector<int> strides_{4, 128, 1028};
  int footprint_kib_ = 16;

  // "23.0" when every chain agrees to the shown precision, "22.9..23.1" otherwise.
  static std::string span_text(const Stats& s, int decimals) {
    const auto lo = fmt::format("{:.{}f}", s.min, decimals), hi = fmt::format("{:.{}f}", s.max, decimals);
    return lo == hi ? lo : lo + ".." + hi;
  }

  static const char* to_string(sl::Addressing a) {
    return a == sl::Addressing::precomputed ? "precomputed" : "indexed";
  }

  const Result& chase(ProbeContext& ctx, sl::Addressing addressing, const std::vector<std::uint32_t>& next,
                      Json params) {
    params["address"] = to_string(addressing);
    const std::vector<int> lengths =
        ctx.options.quick ? std::vector<int>{256, 512, 1024, 2048} : std::vector<int>{256, 512, 1024, 2048, 4096, 8192};
    DeviceBuffer<std::uint32_t> d_next(next.size()), sink(1);
    DeviceBuffer<std::uint64_t> cycles(1);
    DeviceBuffer<ClockWindow> clock(1);
    d_next.upload(next);
    const std::vector<double> x(lengths.begin(), lengths.end());

    // One sample: a chase of every length, then the line through their cycles.
    std::vector<double> intercepts, residuals;
    const Measurement m = ctx.harness.measure(fmt::format("smem-latency {}", params.dump()), [&] {
      std::vector<double> y;
      for (int loads : lengths) {
        cycles.poison();
        sl::launch_chase(addressing, {d_next.get(), static_cast<int>(next.size()), loads},
                         {cycles.get(), sink.get(), clock.get()}, ctx.harness.stream());
        y.push_back(static_cast<double>(cycles.download()[0]));  // synchronous copy: waits for the kernel
      }
      const ClockWindow longest = clock.download()[0];  // lengths ascend: the last chase is the longest
      const auto line = chain::fit_line(x, y);
      intercepts.push_back(line.intercept);
      residuals.push_back(line.max_rel_residual);
      return Sample{line.slope, window_mhz(longest), (longest.end.ns - longest.begin.ns) * 1e-9};
    });

    Result r(name(), std::move(params));
    r.metric(metric::latency_cycles, m.stats, "cycles", Better::lower);
    r.value(metric::latency_ns, m.stats.median / m.sm_clock_mhz * 1e3);
    r.value(metric::overhead_cycles, summarize(intercepts).median);
    r.value(metric::chase_loads, fmt::format("{}..{} ({} lengths)", lengths.front(), lengths.back(), lengths.size()));
    r.value(metric::sm_clock_mhz, m.sm_clock_mhz);
    const double residual = summarize(residuals).max;
    r.checked({{"what", "cycles linear in chase length"}, {"max_rel_residual", residual}, {"max", kMaxResidual}},
              residual <= kMaxResidual);
    r.telemetry = m.telemetry;
    return ctx.add(std::move(r));
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(SmemLatency);

}  // namespace tkprobe
