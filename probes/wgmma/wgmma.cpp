// wgmma: tensor-core throughput of wgmma.mma_async, the only path to Hopper's peak.
//
// Every SM runs `--warpgroups` blocks of one warpgroup; each loads its operands into shared
// memory once and then issues wgmma back to back on them, so nothing but the tensor cores
// (and the shared-memory reads they make) is timed. The rate is set against the datasheet
// peak and against the clock peak at the SM clock measured inside the kernel, which under
// tensor load sits well below the boost clock.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "probes/measure/tensor_bench.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace tkprobe {
namespace {

using namespace tensor;

class WgmmaProbe final : public Probe {
 public:
  std::string name() const override { return "wgmma"; }
  std::string summary() const override {
    return "wgmma.mma_async throughput by shape, type and A source: TFLOP/s, % of datasheet and clock peak";
  }
  Requirements needs() const override { return {.sm90a = {Sm90aFeature::wgmma}}; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--shape", shape_, "MxN: M is 64, N a multiple of 8 up to 256 (s8: 8, 16, 24, then x16)");
    cmd.add_option("--dtype", dtypes_, "Input types: bf16 fp16 tf32 e4m3 e5m2 s8 (default bf16)")->delimiter(',');
    cmd.add_option("--acc", acc_, "Accumulator: f32 or f16 (fp16 and fp8 only); s8 uses s32");
    cmd.add_option("--a", a_, "Where A comes from: smem or reg (default smem)")
        ->check(CLI::IsMember({"smem", "reg"}));
    cmd.add_option("--warpgroups", warpgroups_, "Warpgroups per SM, 1..16 (default 2)")
        ->check(CLI::Range(1, 16))
        ->delimiter(',');
    cmd.add_flag("--sweep", sweep_, "Every valid N for each type, A from shared memory and from registers");
  }

  void validate() const override { configs(); }

  void run(ProbeContext& ctx) override {
    std::vector<std::pair<WgmmaConfig, TensorRun>> runs;
    for (const WgmmaConfig& c : configs()) {
      TensorRun run = run_wgmma(ctx, c);
      ctx.add(tensor_result(name(), params_json(c), c.dtype, run));
      if (run.skipped.empty()) runs.emplace_back(c, std::move(run));
    }
    for (const std::string& d : dtypes_) report_best(ctx, require_dtype(d, "wgmma"), runs);
  }

 private:
  std::string shape_ = "64x256";
  std::vector<std::string> dtypes_{"bf16"};
  std::string acc_;
  std::string a_ = "smem";
  std::vector<int> warpgroups_{2};
  bool sweep_ = false;

  // Every configuration the options ask for; throws UsageError for any the ISA forbids.
  std::vector<WgmmaConfig> configs() const {
    const auto shape = parse_shape(shape_);
    if (!shape) throw UsageError(fmt::format("--shape {}: give MxN, e.g. 64x256", shape_));
    std::vector<WgmmaConfig> out;
    for (const std::string& text : dtypes_) {
      const DType d = require_dtype(text, "wgmma");
      const auto parsed_acc = acc_.empty() ? default_acc(d) : parse_acc(acc_);
      if (!parsed_acc) throw UsageError(fmt::format("--acc {}: give f32, f16 or s32", acc_));
      validate_wgmma(d, *parsed_acc, shape->first, sweep_ ? 256 : shape->second);
      const std::vector<int> ns = sweep_ ? wgmma_ns(d) : std::vector<int>{shape->second};
      const std::vector<ASource> sources =
          sweep_ ? std::vector<ASource>{ASource::smem, ASource::reg}
                 : std::vector<ASource>{a_ == "reg" ? ASource::reg : ASource::smem};
      for (int w : warpgroups_)
        for (ASource a : sources)
          for (int n : ns) out.push_back({d, *parsed_acc, n, a, w});
    }
    return out;
  }

  // The fastest configuration of type `d`, and the smallest N that comes within 5% of it.
  void report_best(ProbeContext& ctx, DType d, const std::vector<std::pair<WgmmaConfig, TensorRun>>& runs) const {
    const std::pair<WgmmaConfig, TensorRun>* best = nullptr;
    for (const auto& r : runs) {
      if (r.first.dtype == d && (!best || r.second.tflops() > best->second.tflops())) best = &r;
    }
    if (!best) return;
    const auto& [c, run] = *best;
    int smallest_n = c.n;
    for (const auto& [other, o] : runs) {
      if (other.dtype == d && other.a == c.a && other.warpgroups == c.warpgroups &&
          o.tflops() >= 0.95 * run.tflops()) {
        smallest_n = std::min(smallest_n, other.n);
      }
    }
    ctx.finding(name(), fmt::format("{} ({} accumulators): best {}; N >= {} comes within 5% of it", info(d).name,
                                    tensor::name(c.acc), headline(describe(c), d, run), smallest_n));
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(WgmmaProbe);

}  // namespace tkprobe
