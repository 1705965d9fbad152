// occupancy: how many resident warps an instruction stream needs before it saturates its unit.
//
// The kernel is the same as the wgmma and mma-sync probes'; the sweep changes only how many of
// its blocks may share an SM, by padding each block's dynamic shared memory, and reports the
// occupancy the runtime's occupancy API then gives beside the throughput.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "probes/tensor_bench.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace tkprobe {
namespace {

using namespace tensor;

constexpr int kMaxBlocksSwept = 16;  // 64 warps of 4-warp blocks, or 16 warpgroups
constexpr double kNearBest = 0.9;    // "saturated": within 10% of the sweep's best

struct Point {
  int warps;
  double tflops;
};

class Occupancy final : public Probe {
 public:
  std::string name() const override { return "occupancy"; }
  std::string summary() const override {
    return "Throughput against resident warps per SM (blocks limited by shared-memory padding) for mma.sync and wgmma";
  }
  int min_cc() const override { return 90; }
  int max_cc() const override { return 90; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--kernel", kernels_, "Kernels to sweep: mma-sync, wgmma (default both)")
        ->check(CLI::IsMember({"mma-sync", "wgmma"}))
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
  }

 private:
  std::vector<std::string> kernels_{"mma-sync", "wgmma"};
  std::string dtype_ = "bf16";
  std::string shape_ = "64x256";
  int ilp_ = 1;

  bool has(std::string_view k) const { return std::find(kernels_.begin(), kernels_.end(), k) != kernels_.end(); }

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
    if (points.empty()) return;
    const double best = std::max_element(points.begin(), points.end(), [](auto& a, auto& b) {
                          return a.tflops < b.tflops;
                        })->tflops;
    const Point& enough = *std::find_if(points.begin(), points.end(), [&](auto& p) { return p.tflops >= kNearBest * best; });
    ctx.finding(name(), fmt::format("{} {} {}: {} warps per SM reach {:.0f}% of the sweep's best {:.1f} TFLOP/s "
                                    "(one block: {:.1f}; {} warps were the most that fit; {} of {} rows ran with "
                                    "fewer blocks at once than the occupancy API allows)",
                                    kernel, info(d).name, config, enough.warps, 100 * kNearBest, best,
                                    points.front().tflops, points.back().warps, in_waves, points.size()));
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(Occupancy);

}  // namespace tkprobe
