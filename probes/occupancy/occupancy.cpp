// occupancy: how many resident warps an instruction stream needs before it saturates its unit.
//
// The kernels are the wgmma and mma-sync probes' and the bandwidth probe's HBM copy; the sweep
// changes only how many of their blocks may share an SM, by padding each block's dynamic shared
// memory, and reports the occupancy the runtime's occupancy API then gives beside the throughput.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "probes/measure/tensor_bench.hpp"
#include "probes/occupancy/metrics.hpp"
#include "probes/timed_kernels/bandwidth_kernels.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::occupancy;  // this probe's metrics.json

namespace tkprobe {
namespace {

using namespace tensor;

constexpr int kMaxBlocksSwept = 16;  // 64 warps of 4-warp blocks, or 16 warpgroups
constexpr double kNearBest = 0.9;    // "saturated": within 10% of the sweep's best

struct Point {
  int warps;
  double rate;  // TFLOP/s, or TB/s for the stream kernel
};

class Occupancy final : public Probe {
 public:
  std::string name() const override { return "occupancy"; }
  std::string summary() const override {
    return "Throughput against resident warps per SM (blocks limited by shared-memory padding) for mma.sync and wgmma";
  }
  std::vector<RowNeeds> row_needs() const override { return {{"wgmma rows", kWgmmaNeeds}}; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--kernel", kernels_, "Kernels to sweep: mma-sync, wgmma, stream (default all)")
        ->check(CLI::IsMember({"mma-sync", "wgmma", "stream"}))
        ->delimiter(',');
    cmd.add_option("--dtype", dtype_, "Input type (default bf16)");
    cmd.add_option("--shape", shape_, "wgmma shape MxN (default 64x256)");
    cmd.add_option("--ilp", ilp_, "mma.sync independent accumulators per warp, 1..8 (default 1: one dependent chain)")
        ->check(CLI::Range(1, 8));
  }
  void validate() const override {
    const DType d = require_dtype(dtype_, "wgmma");
    const auto shape = parse_shape(shape_);
    if (!shape) throw UsageError(fmt::format("--shape {}: give MxN, e.g. 64x256", shape_));
    validate_wgmma(d, default_acc(d), shape->first, shape->second);
    if (has("mma-sync")) require_dtype(dtype_, "mma.sync");
  }

  void run(ProbeContext& ctx) override {
    const DType d = require_dtype(dtype_, "wgmma");
    if (has("mma-sync")) {
      sweep(ctx, "mma.sync", fmt::format("ilp={}", ilp_), [&](int blocks) {
        const MmaSyncConfig c{d, ilp_, blocks * kMmaSyncBlockWarps};
        return std::pair{params_json(c), run_mma_sync(ctx, c)};
      });
    }
    if (has("wgmma")) {
      const int n = parse_shape(shape_)->second;
      sweep(ctx, "wgmma", fmt::format("64x{} A=smem", n), [&](int blocks) {
        const WgmmaConfig c{d, default_acc(d), n, ASource::smem, blocks};
        return std::pair{params_json(c), run_wgmma(ctx, c)};
      });
    }
    if (has("stream")) sweep_stream(ctx);
  }

 private:
  std::vector<std::string> kernels_{"mma-sync", "wgmma", "stream"};
  std::string dtype_ = "bf16";
  std::string shape_ = "64x256";
  int ilp_ = 1;

  bool has(std::string_view k) const { return std::find(kernels_.begin(), kernels_.end(), k) != kernels_.end(); }

  // The memory-bound kernel: HBM copy with 256-thread blocks, 1 to 8 of them per SM.
  void sweep_stream(ProbeContext& ctx) const {
    namespace bw = bandwidth;
    const std::size_t bytes = std::size_t(ctx.options.quick ? 256 : 1024) << 20, count = bytes / sizeof(uint4);
    const auto seed = static_cast<std::uint32_t>(ctx.rng());
    DeviceBuffer<uint4> src(count), dst(count);
    DeviceBuffer<unsigned long long> mismatches(1);
    bw::fill(src.get(), count, seed, ctx.harness.stream());
    const void* kernel = bw::stream_kernel(bw::Stream::copy, bw::Variant{});
    std::vector<Point> points;
    int in_waves = 0;  // rows whose blocks did not all run at once (measured by their spans)
    constexpr int kMaxBlocks = 2048 / bw::kThreads;
    for (int blocks = 1; blocks <= kMaxBlocks; ++blocks) {
      const Residency res = plan_residency(kernel, bw::kThreads, blocks, 0, ctx.device);
      Result r(name(), {{"kernel", "stream"}, {"op", "hbm copy"}, {"bytes", bytes}, {"blocks_per_sm", blocks}});
      if (res.blocks_per_sm != blocks) {
        r.status = Status::skipped;
        r.reason = fmt::format("{} blocks of {} threads fit per SM, not {}", res.blocks_per_sm, bw::kThreads, blocks);
        ctx.add(std::move(r));
        break;
      }
      dst.poison();
      DeviceBuffer<BlockSpan> spans(std::size_t(blocks) * ctx.device.sms);
      const Measurement m = ctx.harness.time_kernel_rate(
          fmt::format("occupancy stream blocks={}", blocks),
          [&](cudaStream_t s) {
            bw::launch_stream(bw::Stream::copy, bw::Variant{}, src.get(), dst.get(), count, seed, nullptr,
                              blocks * ctx.device.sms, res.dynamic_smem, s, spans.get());
          },
          2.0 * bytes / 1e12);
      const int concurrent = concurrent_blocks_per_sm(spans.download());  // the last timed launch's
      mismatches.poison(0);
      bw::count_mismatches(dst.get(), count, seed, mismatches.get(), ctx.harness.stream());
      const auto bad = mismatches.download()[0];
      r.metric(metric::tbps, m.stats, "TB/s", Better::higher);
      r.value(metric::warps_per_sm, res.warps_per_sm);
      r.value(metric::occupancy_pct, 100 * res.occupancy);
      r.value(metric::registers_per_thread, res.registers_per_thread);
      r.value(metric::concurrent_blocks_per_sm, concurrent);
      r.checked({{"what", "words copied that differ from the source"}, {"value", bad}}, bad == 0);
      r.telemetry = m.telemetry;
      ctx.add(std::move(r));
      points.push_back({res.warps_per_sm, m.stats.median});
      in_waves += concurrent < blocks;
    }
    report_saturation(ctx, "stream", "hbm copy", "TB/s", points, in_waves);
  }

  // "<kernel> <config>: W warps per SM reach 90% of the sweep's best ...".
  void report_saturation(ProbeContext& ctx, const std::string& kernel, const std::string& config,
                         const std::string& unit, const std::vector<Point>& points, int in_waves) const {
    if (points.empty()) return;
    const double best =
        std::max_element(points.begin(), points.end(), [](auto& a, auto& b) { return a.rate < b.rate; })->rate;
    const Point& enough =
        *std::find_if(points.begin(), points.end(), [&](auto& p) { return p.rate >= kNearBest * best; });
    ctx.finding(name(), fmt::format("{} {}: {} warps per SM reach {:.0f}% of the sweep's best {:.2f} {} (one block: "
                                    "{:.2f}; {} warps were the most that fit; {} of {} rows ran with fewer blocks at "
                                    "once than the occupancy API allows)",
                                    kernel, config, enough.warps, 100 * kNearBest, best, unit, points.front().rate,
                                    points.back().warps, in_waves, points.size()));
  }

  // One row per blocks-per-SM count until a count no longer fits (that row says why).
  template <class RunAt>
  void sweep(ProbeContext& ctx, const std::string& kernel, const std::string& config, RunAt run_at) const {
    const DType d = require_dtype(dtype_, "wgmma");
    std::vector<Point> points;
    int in_waves = 0;  // rows whose blocks did not all run at once (measured)
    for (int blocks = 1; blocks <= kMaxBlocksSwept; ++blocks) {
      auto [params, run] = run_at(blocks);
      params["kernel"] = kernel;
      ctx.add(tensor_result(name(), params, d, run));
      if (!run.skipped.empty()) break;
      points.push_back({run.residency.warps_per_sm, run.tflops()});
      in_waves += run.concurrent_blocks_per_sm < blocks;
    }
    report_saturation(ctx, kernel, fmt::format("{} {}", info(d).name, config), "TFLOP/s", points, in_waves);
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(Occupancy);

}  // namespace tkprobe
