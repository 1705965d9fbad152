// mma-sync: tensor-core throughput of the warp-synchronous mma.sync that Ampere kernels use.
//
// Each warp keeps `--ilp` independent accumulators and issues mma.sync on register operands
// back to back; `--warps-per-sm` warps share each SM. Hopper still runs mma.sync, but each
// warp waits for its own results, and the grid shows how far that stays from wgmma's rate.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "probes/measure/tensor_bench.hpp"
#include "probes/timed_kernels/mma_sync_kernels.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace tkprobe {
namespace {

using namespace tensor;

class MmaSyncProbe final : public Probe {
 public:
  std::string name() const override { return "mma-sync"; }
  std::string summary() const override {
    return "mma.sync throughput over independent accumulators (ILP) and warps per SM, against the same peaks";
  }
  std::vector<RowNeeds> row_needs() const override { return {{"e4m3 rows", mma_sync_needs(DType::e4m3)}}; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--dtype", dtypes_, "Input types: bf16 fp16 tf32 e4m3 s8 (default bf16)")->delimiter(',');
    cmd.add_option("--ilp", ilps_, "Independent accumulators per warp, 1..8 (default all)")
        ->check(CLI::Range(1, kMaxIlp))
        ->delimiter(',');
    cmd.add_option("--warps-per-sm", warps_, "Warps per SM: 1..4, or multiples of 4 up to 64 (default 4 8 16 32 48 64)")
        ->delimiter(',');
  }

  void validate() const override {
    for (const std::string& d : dtypes_) require_dtype(d, "mma.sync");
    for (int w : warps_) {
      if (!valid_mma_sync_warps(w)) {
        throw UsageError(fmt::format("--warps-per-sm {}: give 1 to 4, or a multiple of 4 up to 64", w));
      }
    }
  }

  void run(ProbeContext& ctx) override {
    for (const std::string& text : dtypes_) {
      const DType d = require_dtype(text, "mma.sync");
      std::optional<std::pair<MmaSyncConfig, TensorRun>> best;
      for (int w : warps_) {
        for (int ilp : ilps_) {
          const MmaSyncConfig c{d, ilp, w};
          TensorRun run = run_mma_sync(ctx, c);
          ctx.add(tensor_result(name(), params_json(c), d, run));
          if (run.skipped.empty() && (!best || run.tflops() > best->second.tflops())) best.emplace(c, std::move(run));
        }
      }
      if (best) report_best(ctx, best->first, best->second);
    }
  }

 private:
  std::vector<std::string> dtypes_{"bf16"};
  std::vector<int> ilps_{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<int> warps_{4, 8, 16, 32, 48, 64};

  void report_best(ProbeContext& ctx, const MmaSyncConfig& c, const TensorRun& run) const {
    ctx.finding(name(), fmt::format("{}: best {}", info(c.dtype).name, headline(describe(c), c.dtype, run)));
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(MmaSyncProbe);

}  // namespace tkprobe
