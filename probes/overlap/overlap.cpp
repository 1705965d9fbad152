// overlap: how much non-tensor work hides under asynchronous wgmma before tensor throughput drops.
//
// Each SM runs one or more warpgroups (one block each) issuing bf16 m64n256k16 wgmma back to back
// from shared memory, as the wgmma probe does; after every wgmma each thread also issues k FFMA or
// k MUFU.EX2 on registers of its own (probes/overlap/overlap_kernels.hpp). A wgmma of this shape
// keeps an SM's tensor cores busy for 128 cycles, in which each of the four quadrants' schedulers
// could issue 128 instructions; the sweep over k shows how many of them a kernel really gets for
// free: the budget an attention kernel's softmax (exp, max, scale, convert) has per product.
// Every row is the wgmma probe's measurement: the product checked against the host, % of the clock
// peak at the clock measured inside the kernel.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <map>
#include <optional>

#include "probes/measure/tensor_bench.hpp"
#include "probes/overlap/overlap_kernels.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace tkprobe {
namespace {

using tensor::Filler;

const std::map<std::string, Filler> kFillers = {{"fma", Filler::fma}, {"ex2", Filler::ex2}};
constexpr double kSmallDrop = 0.95, kHalf = 0.5;  // the findings' two thresholds, against k = 0
constexpr int kQuickMaxCount = 32;

std::string filler_name(Filler f) { return f == Filler::fma ? "fma" : "ex2"; }

class Overlap final : public Probe {
 public:
  std::string name() const override { return "overlap"; }
  std::string summary() const override {
    return "Tensor throughput against non-tensor instructions (FFMA, MUFU.EX2) issued per wgmma";
  }
  Requirements needs() const override { return {.sm90a = {Sm90aFeature::wgmma, Sm90aFeature::tma}}; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--filler", fillers_, "Non-tensor instructions: fma, ex2 (comma-separated; default both)")
        ->delimiter(',')
        ->check(CLI::IsMember(kFillers));
    cmd.add_option("--warpgroups", warpgroups_, "Warpgroups per SM, 1..3 (comma-separated; default 1,2)")
        ->delimiter(',')
        ->check(CLI::Range(1, 3));
  }

  void run(ProbeContext& ctx) override {
    for (int warpgroups : warpgroups_) {
      const tensor::TensorRun plain = measure(ctx, Filler::none, 0, warpgroups);
      for (const std::string& f : fillers_) sweep(ctx, kFillers.at(f), warpgroups, plain);
    }
  }

 private:
  std::vector<std::string> fillers_{"fma", "ex2"};
  std::vector<int> warpgroups_{1, 2};

  tensor::TensorRun measure(ProbeContext& ctx, Filler f, int count, int warpgroups) const {
    tensor::WgmmaConfig c{tensor::DType::bf16, tensor::Acc::f32, overlap::kWgmmaN, tensor::ASource::smem, warpgroups,
                          f == Filler::none ? nullptr : overlap::filler_kernel(f, count)};
    tensor::TensorRun run = tensor::run_wgmma(ctx, c);
    Json params = tensor::params_json(c);
    params["filler"] = f == Filler::none ? "none" : filler_name(f);
    params["per_wgmma"] = count;
    ctx.add(tensor::tensor_result(name(), params, tensor::DType::bf16, run));
    return run;
  }

  // k = 1, 2, 4, ... after the plain row (k = 0), and the counts at which the tensor throughput
  // falls 5% and 50% below it.
  void sweep(ProbeContext& ctx, Filler f, int warpgroups, const tensor::TensorRun& plain) const {
    std::optional<int> small_drop, halved;
    for (int count : overlap::kCounts) {
      if (ctx.options.quick && count > kQuickMaxCount) break;
      const tensor::TensorRun run = measure(ctx, f, count, warpgroups);
      if (!run.skipped.empty()) return;
      const double share = run.pct_clock_peak() / plain.pct_clock_peak();
      if (!small_drop && share < kSmallDrop) small_drop = count;
      if (!halved && share < kHalf) halved = count;
    }
    const auto at = [](const std::optional<int>& k) {
      return k ? fmt::format("{} per wgmma", *k) : std::string("beyond the sweep");
    };
    ctx.finding(name(), fmt::format("{} warpgroup(s) per SM, {}: tensor throughput {:.1f}% of the clock peak with "
                                    "none; 5% lower at {}, halved at {} (a wgmma of 64x256x16 is 128 SM cycles)",
                                    warpgroups, filler_name(f), plain.pct_clock_peak(), at(small_drop), at(halved)));
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(Overlap);

}  // namespace tkprobe
