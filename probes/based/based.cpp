// based: the Based linear-attention forward written in the DSL (kernels/based) against the
// tensor-core peak, checked against an fp32 reference on the same inputs.
//
// Per shape: fresh ~N(0, 1) bf16 Q, K, V drawn on the GPU, the quadratic fp32 reference once
// (untimed), then the kernel on a poisoned output, timed with CUDA events (based::flops per
// launch: the chunked form's tensor-core products over the 273 unfolded features), and its last
// output compared with the reference. The SM clock is measured around every timed launch
// (probes/measure/clock_bracket.hpp), so each sample's rate is also set against the clock peak at
// that clock.
#include "kernels/based/based.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iterator>
#include <cmath>
#include <optional>
#include <string_view>
#include <vector>

#include "kernels/attention/reference.hpp"
#include "kernels/based/reference.hpp"
#include "probes/based/metrics.hpp"
#include "probes/measure/clock_bracket.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::based;  // this probe's metrics.json

namespace tkprobe {
namespace {

using based::Shape;
using bf16 = __nv_bfloat16;

// The sweep: the lengths ThunderKittens and fla report Based at (batch 16, 16 heads), and one
// that is no multiple of the kernel's chunk, normalized; then ThunderKittens' lengths again without
// the normalization, as its kernel computes them (the numerator alone). --quick: small, and
// likewise no multiple.
constexpr int kSweepBatch = 16, kSweepHeads = 16;
constexpr int kSweepSeqs[] = {1024, 4096, 8192, 16384, 5000};
constexpr int kNumeratorSweepSeqs[] = {1024, 4096, 8192, 16384};
constexpr int kQuickBatch = 2, kQuickHeads = 4, kQuickSeq = 1000;
constexpr int kValueDim = 64;  // the peers' (issue 18), unless --value-dim

// bf16 inputs, features, state operands and output put the relative error at a few 2^-9; a wrong
// row, chunk or state gives ~1. The worst single row may be twice as far off.
constexpr double kMaxRelError = 1e-2, kMaxRowError = 2e-2;

std::string describe(const Shape& s) {
  return fmt::format("B={} H={} N={} Dk={} Dv={}{}", s.batch, s.heads, s.seq, s.feature_dim, s.value_dim,
                     s.normalize ? " normalized" : "");
}

Json params_json(const Shape& s) {
  return {{"seq", s.seq},
          {"batch", s.batch},
          {"heads", s.heads},
          {"feature_dim", s.feature_dim},
          {"value_dim", s.value_dim},
          {"normalize", s.normalize},
          {"dtype", "bf16"}};
}

// Inputs, output and the reference of one shape, on the GPU.
struct Buffers {
  explicit Buffers(const Shape& s)
      : q(rows(s) * s.feature_dim), k(q.size()), v(rows(s) * s.value_dim), o(v.size()), o_ref(v.size()) {}
  static std::size_t rows(const Shape& s) { return std::size_t(s.batch) * s.heads * s.seq; }
  based::Tensors tensors() { return {q.get(), k.get(), v.get(), o.get()}; }

  DeviceBuffer<bf16> q, k, v, o;
  DeviceBuffer<float> o_ref;
};

// One measured shape.
struct Run {
  Shape shape;
  double tflops;
  std::optional<double> pct_clock_peak;
  double rel_error, worst_row_error;
  bool passed;
};

class BasedProbe final : public Probe {
 public:
  std::string name() const override { return "based"; }
  std::string summary() const override {
    return "Based linear attention forward (the DSL's chunked wgmma kernel): ms, TFLOP/s, % of the clock peak, "
           "error vs fp32";
  }
  Requirements needs() const override { return {.sm90a = {Sm90aFeature::wgmma, Sm90aFeature::tma}}; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--batch", batch_, "Batch size (with --heads and --seq; default: the sweep)");
    cmd.add_option("--heads", heads_, "Heads");
    cmd.add_option("--seq", seq_, "Sequence length");
    cmd.add_option("--value-dim", value_dim_, "Value dimension: 64 (the default) or 128");
    cmd.add_flag("--no-normalize", no_normalize_, "The numerator alone (default: divided by the sum of the weights)");
    cmd.add_flag("--sweep", sweep_,
                 "B=16 H=16, N 1024/4096/8192/16384 and 5000 normalized, then N 1024..16384 not (the default without "
                 "a shape; --no-normalize: the second part alone, with 5000)");
  }
  void validate() const override {
    const int given = batch_.has_value() + heads_.has_value() + seq_.has_value();
    if (sweep_ && (given > 0 || value_dim_)) {
      throw UsageError("--sweep runs the standard shapes: give it no --batch, --heads, --seq or --value-dim");
    }
    if ((given > 0 || value_dim_) && given != 3) {
      throw UsageError(
          "--batch, --heads, --seq: give all three (--value-dim and --no-normalize are optional), or "
          "none for the sweep");
    }
    if (given == 0) return;
    const Shape s = given_shape();
    if (const std::string why = based::refusal(s); !why.empty()) {
      throw UsageError(fmt::format("{}: {}", describe(s), why));
    }
  }

  void run(ProbeContext& ctx) override {
    std::vector<Run> runs;
    for (const Shape& s : shapes(ctx.options.quick)) runs.push_back(measure(ctx, s));
    for (const bool normalized : {true, false}) {  // a finding each: they differ by the denominator's work
      std::vector<Run> part;
      std::copy_if(runs.begin(), runs.end(), std::back_inserter(part),
                   [&](const Run& r) { return r.shape.normalize == normalized; });
      summarise(ctx, part, normalized ? "normalized" : "numerator alone");
    }
  }

 private:
  std::optional<int> batch_, heads_, seq_, value_dim_;
  bool no_normalize_ = false, sweep_ = false;

  Shape shape(int batch, int heads, int seq, bool normalize) const {
    return {batch, heads, seq, based::kFeatureDim, value_dim_.value_or(kValueDim), normalize};
  }
  Shape shape(int batch, int heads, int seq) const { return shape(batch, heads, seq, !no_normalize_); }
  Shape given_shape() const { return shape(*batch_, *heads_, *seq_); }

  // A given shape; else --quick's (over --sweep too: CI-sized means small); else the sweep.
  std::vector<Shape> shapes(bool quick) const {
    if (batch_) return {given_shape()};
    if (quick) return {shape(kQuickBatch, kQuickHeads, kQuickSeq)};
    std::vector<Shape> out;
    for (int n : kSweepSeqs) out.push_back(shape(kSweepBatch, kSweepHeads, n));
    if (!no_normalize_)
      for (int n : kNumeratorSweepSeqs) out.push_back(shape(kSweepBatch, kSweepHeads, n, false));
    return out;
  }

  Run measure(ProbeContext& ctx, const Shape& s) {
    Buffers b(s);
    const cudaStream_t stream = ctx.harness.stream();
    attention_check::fill_normal(b.q.get(), b.q.size(), ctx.rng(), stream);
    attention_check::fill_normal(b.k.get(), b.k.size(), ctx.rng(), stream);
    attention_check::fill_normal(b.v.get(), b.v.size(), ctx.rng(), stream);
    based_check::reference_forward(b.q.get(), b.k.get(), b.v.get(), b.o_ref.get(), s, stream);
    TK_CUDA(cudaStreamSynchronize(stream));

    const based::Forward forward(b.tensors(), s);
    b.o.poison();
    SmClockBracket clock(ctx.device.sms);
    const ClockBracket bracket{[&](cudaStream_t st) { clock.begin(st); }, [&](cudaStream_t st) { clock.end(st); },
                               clock.window()};
    const Measurement m = ctx.harness.time_kernel_rate(
        fmt::format("based {}", describe(s)), [&](cudaStream_t st) { forward(st); }, based::flops(s) / 1e12, bracket);
    Result r(name(), params_json(s));
    const auto pct_clock = add_rates(ctx, r, m, s);
    const auto e = based_check::compare_to_reference(b.o.get(), b.o_ref.get(), s, stream);
    r.value(metric::rel_error, e.rel_error);
    r.value(metric::worst_row_error, e.worst_row_error);
    const bool passed = e.rel_error < kMaxRelError && e.worst_row_error < kMaxRowError;  // false on NaN
    r.checked({{"what",
                "||O - O_ref||_F / ||O_ref||_F and the same for the worst row, against the quadratic fp32 "
                "reference"},
               {"value", e.rel_error},
               {"max", kMaxRelError},
               {"worst_row_error", e.worst_row_error},
               {"worst_row_max", kMaxRowError}},
              passed);
    ctx.add(std::move(r));
    return {s, m.stats.median, pct_clock, e.rel_error, e.worst_row_error, passed};
  }

  // The row's rates: TFLOP/s, the time per launch it implies, and (judged) % of the clock peak.
  static std::optional<double> add_rates(ProbeContext& ctx, Result& r, const Measurement& m, const Shape& s) {
    r.metric(metric::tflops, m.stats, "TFLOP/s", Better::higher);
    r.value(metric::ms, based::flops(s) / (m.stats.median * 1e12) * 1e3);
    r.telemetry = m.telemetry;
    const auto pct_clock = pct_of_clock_peak(m, ctx.device.sms, hopper_flop_per_clock_per_sm("bf16"));
    if (!pct_clock) return std::nullopt;
    // Judged per clock, as attention is: TFLOP/s moves with the power state from run to run, the
    // share of the peak at the clock the kernel ran at far less.
    r.metric(metric::pct_clock_peak, *pct_clock, "%", Better::higher);
    r.primary = "pct_clock_peak";
    return pct_clock->median;
  }

  // One line: the range over the shapes, the best and slowest shapes, the largest errors.
  void summarise(ProbeContext& ctx, const std::vector<Run>& runs, std::string_view what) const {
    if (runs.empty()) return;
    const auto by_rate = [](const Run& a, const Run& b) { return a.tflops < b.tflops; };
    const Run& best = *std::max_element(runs.begin(), runs.end(), by_rate);
    const Run& worst = *std::min_element(runs.begin(), runs.end(), by_rate);
    double rel = 0, row = 0;
    int failed = 0;
    const auto worse = [](double a, double b) { return std::isnan(b) || b > a ? b : a; };  // NaN: unwritten output
    for (const Run& r : runs) {
      rel = worse(rel, r.rel_error);
      row = worse(row, r.worst_row_error);
      failed += !r.passed;
    }
    ctx.finding(name(),
                fmt::format("based fwd, {}: {:.1f}..{:.1f} TFLOP/s over {} shapes; best {} = {:.1f} TFLOP/s "
                            "({:.3f} ms{}); slowest {}; largest errors: relative {:.2e}, worst row {:.2e}; "
                            "{} of {} failed the check",
                            what, worst.tflops, best.tflops, runs.size(), describe(best.shape), best.tflops,
                            based::flops(best.shape) / (best.tflops * 1e12) * 1e3,
                            best.pct_clock_peak ? fmt::format(", {:.1f}% of the clock peak", *best.pct_clock_peak)
                                                : std::string(),
                            describe(worst.shape), rel, row, failed, runs.size()));
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(BasedProbe);

}  // namespace tkprobe
