// quadrants: why a warpgroup is four warps. An SM is four sub-partitions (quadrants), each with its
// own scheduler issuing one warp instruction a cycle to its own 32 FP32 lanes; a warp lives in one
// of them. One block per SM of 1, 2, 3, ... warps runs independent FFMA chains, and the SM's
// FFMA lanes per cycle (clock64 around block 0's work) show the limit: 32 per quadrant a block's
// warps occupy, 128 once all four are. Each row also gives the warps' %warpid (the hardware's warp
// slot; slot mod 4 is the sub-partition on Hopper, as the rows show when the rate steps at each).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <set>

#include "probes/quadrants/metrics.hpp"
#include "probes/quadrants/quadrants_kernels.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"
#include "src/residency.hpp"

namespace metric = tkprobe::probe_metrics::quadrants;  // this probe's metrics.json

namespace tkprobe {
namespace {

namespace qd = quadrants;

constexpr int kMaxWarps = 32;
constexpr long long kTrips = 4096, kQuickTrips = 512;

class Quadrants final : public Probe {
 public:
  std::string name() const override { return "quadrants"; }
  std::string summary() const override {
    return "FFMA lanes per cycle per SM with 1, 2, 3, ... warps: the four sub-partitions' limit";
  }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--warps", warps_, "Warps per SM, 1..32 (comma-separated; default 1-8, 12, 16, 32)")
        ->delimiter(',')
        ->check(CLI::Range(1, kMaxWarps));
  }

  void run(ProbeContext& ctx) override {
    std::vector<double> rates;
    for (int warps : chosen(ctx.options.quick)) rates.push_back(measure(ctx, warps));
    const auto list = chosen(ctx.options.quick);
    const auto at = [&](int w) {
      const auto it = std::find(list.begin(), list.end(), w);
      return it == list.end() ? std::string("not run") : fmt::format("{:.1f}", rates[it - list.begin()]);
    };
    ctx.finding(name(), fmt::format("FFMA lanes per SM cycle: 1 warp {}, 2 warps {}, 4 warps {}, 8 warps {} (each "
                                    "quadrant issues 32 a cycle: 32, 64, 128, 128 if warps spread over them)",
                                    at(1), at(2), at(4), at(8)));
  }

 private:
  std::vector<int> warps_;

  std::vector<int> chosen(bool quick) const {
    if (!warps_.empty()) return warps_;
    if (quick) return {1, 2, 3, 4, 8};
    return {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32};
  }

  // FFMA lanes per cycle of block 0 (its SM), with one block of `warps` warps on every SM.
  double measure(ProbeContext& ctx, int warps) {
    const int threads = warps * qd::kLanes;
    const long long trips = ctx.options.quick ? kQuickTrips : kTrips;
    const Residency res = plan_residency(qd::fma_kernel(), threads, 1, 0, ctx.device);
    DeviceBuffer<ClockWindow> clock(1);
    DeviceBuffer<std::uint32_t> slots(warps), sink(threads);
    qd::Params p{trips, clock.get(), slots.get(), sink.get()};
    const Measurement m = ctx.harness.measure(fmt::format("quadrants warps={}", warps), [&] {
      clock.poison();
      launch_kernel(qd::fma_kernel(), ctx.device.sms, threads, res.dynamic_smem, &p, ctx.harness.stream());
      TK_CUDA(cudaStreamSynchronize(ctx.harness.stream()));
      const ClockWindow w = clock.download()[0];
      return Sample{qd::fma_lanes(warps, trips) / double(w.end.cycles - w.begin.cycles), window_mhz(w),
                    (w.end.ns - w.begin.ns) * 1e-9};
    });
    const std::vector<std::uint32_t> slot_ids = slots.download();
    std::set<std::uint32_t> sub_partitions;
    for (std::uint32_t s : slot_ids) sub_partitions.insert(s % qd::kQuadrants);

    Result r(name(), {{"warps_per_sm", warps}, {"op", "ffma.f32"}});
    r.metric(metric::fma_lanes_per_clock, m.stats, "lanes/clk/SM", Better::higher);
    const int ideal = std::min(warps, qd::kQuadrants) * qd::kLanes;
    r.value(metric::ideal_if_spread, ideal);
    r.value(metric::pct_of_ideal, 100 * m.stats.median / ideal);
    // A string ("2,3,0"), as the report's metrics are scalars or statistics.
    r.value(metric::warp_slots, fmt::format("{}", fmt::join(slot_ids, ",")));
    r.value(metric::sub_partitions_used, int(sub_partitions.size()));
    r.value(metric::blocks_per_sm, res.blocks_per_sm);
    r.telemetry = m.telemetry;
    ctx.add(std::move(r));
    return m.stats.median;
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(Quadrants);

}  // namespace tkprobe
