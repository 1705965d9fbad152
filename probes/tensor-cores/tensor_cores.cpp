// tensor-cores: the side-by-side summary a user quotes. Per input type, the best wgmma and the
// best mma.sync configuration from a small search each, as TFLOP/s, % of the datasheet and
// clock peaks, and wgmma's speedup over mma.sync.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "probes/measure/tensor_bench.hpp"
#include "probes/tensor-cores/metrics.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::tensor_cores;  // this probe's metrics.json

namespace tkprobe {
namespace {

using namespace tensor;

// The searches: where each instruction has its best in the full wgmma and mma-sync sweeps.
constexpr int kWgmmaN = 256;
constexpr int kWgmmaWarpgroups[] = {1, 2, 3};
constexpr int kMmaSyncIlp[] = {2, 4, 8};
constexpr int kMmaSyncWarps[] = {8, 16, 32};

struct Best {
  std::string config;
  TensorRun run;
};

// Every product check of a search: the worst first-product error, and whether all passed.
struct Checks {
  double worst = 0;
  bool passed = true;
  void add(const TensorRun& run) {
    worst = std::max(worst, run.first_error);
    passed &= run.correct();
  }
};

template <class Config, class Run>
std::optional<Best> best_of(ProbeContext& ctx, const std::vector<Config>& configs, Run run_one, Checks& checks) {
  std::optional<Best> best;
  for (const Config& c : configs) {
    TensorRun run = run_one(ctx, c);
    if (!run.skipped.empty()) continue;
    checks.add(run);
    if (!best || run.tflops() > best->run.tflops()) best = Best{describe(c), std::move(run)};
  }
  return best;
}

class TensorCores final : public Probe {
 public:
  std::string name() const override { return "tensor-cores"; }
  std::string summary() const override {
    return "Per input type: best wgmma vs best mma.sync, TFLOP/s and % of peak, side by side";
  }
  Requirements needs() const override { return {.sm90a = {Sm90aFeature::wgmma}}; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--dtype", dtypes_, "Input types (default all: bf16 fp16 tf32 e4m3 e5m2 s8)")->delimiter(',');
  }
  void validate() const override {
    for (const std::string& d : dtypes_) require_dtype(d, "wgmma");
  }

  void run(ProbeContext& ctx) override {
    for (const std::string& text : dtypes_) {
      const DType d = require_dtype(text, "wgmma");
      std::vector<WgmmaConfig> wgmma;
      for (int w : kWgmmaWarpgroups)
        for (ASource a : {ASource::smem, ASource::reg}) wgmma.push_back({d, default_acc(d), kWgmmaN, a, w});
      std::vector<MmaSyncConfig> mma;
      if (mma_sync_supports(d)) {
        for (int w : kMmaSyncWarps)
          for (int ilp : kMmaSyncIlp) mma.push_back({d, ilp, w});
      }
      Checks checks;
      const auto best_wgmma = best_of(ctx, wgmma, run_wgmma, checks);
      const auto best_mma = best_of(ctx, mma, run_mma_sync, checks);
      row(ctx, d, best_wgmma, best_mma, checks);
    }
  }

 private:
  std::vector<std::string> dtypes_{"bf16", "fp16", "tf32", "e4m3", "e5m2", "s8"};

  void row(ProbeContext& ctx, DType d, const std::optional<Best>& wgmma, const std::optional<Best>& mma,
           const Checks& checks) const {
    Result r(name(), {{"dtype", info(d).name}});
    if (!wgmma) {
      r.status = Status::skipped;
      r.reason = "no wgmma configuration fit on this GPU";
      ctx.add(std::move(r));
      return;
    }
    const std::string unit = d == DType::s8 ? "TOP/s" : "TFLOP/s";
    // wgmma's % of the clock peak comes first: the row's primary metric (steady across power states).
    const auto side = [&](const std::string& prefix, const Best& b) {
      r.metric(prefix + "_pct_clock_peak", b.run.pct_clock_peak_stats, "%", Better::higher);
      r.metric(prefix + "_tflops", b.run.rate.stats, unit, Better::higher);
      r.value(prefix + "_config", b.config);
      r.value(prefix + "_pct_datasheet_peak",
              b.run.datasheet_peak ? Json(100 * b.run.tflops() / *b.run.datasheet_peak) : Json(nullptr));
    };
    side("wgmma", *wgmma);
    if (mma) {
      side("mma_sync", *mma);
      r.value(metric::wgmma_over_mma_sync, wgmma->run.tflops() / mma->run.tflops());
    }
    r.telemetry = wgmma->run.rate.telemetry;
    r.checked({{"what", "worst relative error of every configuration's product vs the host's (and its drift bound)"}, {"value", checks.worst}},
              checks.passed);
    ctx.add(std::move(r));
    ctx.finding(name(), mma ? fmt::format("{}: wgmma {:.2f}x mma.sync; wgmma best {}; mma.sync best {}", info(d).name,
                                          wgmma->run.tflops() / mma->run.tflops(),
                                          headline(wgmma->config, d, wgmma->run), headline(mma->config, d, mma->run))
                            : fmt::format("{}: wgmma best {}; mma.sync has no {} form", info(d).name,
                                          headline(wgmma->config, d, wgmma->run), info(d).name));
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(TensorCores);

}  // namespace tkprobe
