// attention: the FlashAttention forward kernels written in the DSL (kernels/attention) against
// the tensor-core peaks, each checked against an fp32 reference on the same inputs.
//
// Per shape: fresh ~N(0, 1) bf16 Q, K, V drawn on the GPU, the fp32 reference once (untimed), then
// per kernel: O and LSE poisoned, the forward pass timed with CUDA events (attention::flops per
// launch), and its last output compared with the reference. The SM clock is measured around every
// timed launch (probes/common/clock_bracket.hpp: the kernels' interface has no room for a clock window),
// so each sample's rate is also set against the clock peak at the clock it ran at.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "kernels/attention/attention.hpp"
#include "probes/common/attention_reference.hpp"
#include "probes/common/clock_bracket.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace tkprobe {
namespace {

using attention::Kernel;
using attention::Shape;
using bf16 = __nv_bfloat16;

// --quick: small, and a length that is no multiple of any tile.
constexpr int kQuickBatch = 2, kQuickHeads = 4, kQuickSeq = 1000;
constexpr int kHeadDims[] = {64, 128};

// bf16 inputs and output put the relative error between 1e-3 and 1e-2 (8 mantissa bits); a
// wrong row or mask gives ~1. LSE is fp32 throughout, so its error is far smaller.
constexpr double kMaxRelError = 1e-2;
constexpr double kMaxLseError = 1e-2;

const std::map<std::string, Kernel> kKernels = {{"wgmma", Kernel::wgmma}, {"mma-sync", Kernel::mma_sync}};

std::string kernel_name(Kernel k) { return k == Kernel::wgmma ? "wgmma" : "mma-sync"; }

std::string describe(const Shape& s) {
  return fmt::format("B={} H={} HKV={} N={} D={}{}", s.batch, s.heads, s.kv_heads, s.seq, s.head_dim,
                     s.causal ? " causal" : "");
}

Json params_json(Kernel k, const Shape& s) {
  return {{"kernel", kernel_name(k)}, {"head_dim", s.head_dim}, {"seq", s.seq},       {"batch", s.batch},
          {"heads", s.heads},         {"kv_heads", s.kv_heads}, {"causal", s.causal}, {"dtype", "bf16"}};
}

// Inputs, outputs and the reference of one shape, on the GPU.
struct Buffers {
  explicit Buffers(const Shape& s)
      : q(rows(s, s.heads) * s.head_dim),
        k(rows(s, s.kv_heads) * s.head_dim),
        v(k.size()),
        o(q.size()),
        lse(rows(s, s.heads)),
        o_ref(q.size()),
        lse_ref(lse.size()) {}
  static std::size_t rows(const Shape& s, int heads) { return std::size_t(s.batch) * heads * s.seq; }
  attention::Tensors tensors() { return {q.get(), k.get(), v.get(), o.get(), lse.get()}; }

  DeviceBuffer<bf16> q, k, v, o;
  DeviceBuffer<float> lse, o_ref, lse_ref;
};

// One measured kernel on one shape.
struct Run {
  Kernel kernel;
  Shape shape;
  double tflops;
  std::optional<double> pct_clock_peak;
  attention_check::Errors errors;
  bool passed;
};

class AttentionProbe final : public Probe {
 public:
  std::string name() const override { return "attention"; }
  std::string summary() const override {
    return "FlashAttention forward (the DSL's wgmma and mma.sync kernels): TFLOP/s, % of peaks, error vs fp32";
  }
  // The wgmma kernel needs sm_90a, whose code runs on 9.0 alone. The mma.sync kernel runs on
  // sm_80 and newer, but one probe with one device rule is simpler than a per-kernel one.
  int min_cc() const override { return 90; }
  int max_cc() const override { return 90; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--batch", batch_, "Batch size (with --heads, --seq and --head-dim; default: the sweep)");
    cmd.add_option("--heads", heads_, "Query heads");
    cmd.add_option("--kv-heads", kv_heads_, "Key/value heads, dividing --heads (default: --heads)");
    cmd.add_option("--seq", seq_, "Sequence length (queries and keys)");
    cmd.add_option("--head-dim", head_dim_, "Head dimension: 64 or 128");
    cmd.add_flag("--causal", causal_, "Causal mask (query i sees keys 0..i)");
    cmd.add_option("--kernel", kernel_, "wgmma or mma-sync (default: both)")->check(CLI::IsMember(kKernels));
    cmd.add_flag("--sweep", sweep_,
                 "16k tokens (B x N), hidden 2048 (D 64: 32 heads, D 128: 16), N 1024/4096/16384, causal and not "
                 "(the default without a shape)");
  }
  void validate() const override {
    const int given = batch_.has_value() + heads_.has_value() + seq_.has_value() + head_dim_.has_value();
    const bool shape_options = given > 0 || kv_heads_ || causal_;
    if (sweep_ && shape_options) {
      throw UsageError("--sweep runs the standard shapes: give it no --batch, --heads, --kv-heads, --seq, "
                       "--head-dim or --causal");
    }
    if (shape_options && given != 4) {
      throw UsageError("--batch, --heads, --seq, --head-dim: give all four (--kv-heads and --causal are optional), "
                       "or none for the sweep");
    }
    if (given == 0) return;
    const Shape s = given_shape();
    for (Kernel k : kernels()) {
      if (const std::string why = attention::refusal(s, k); !why.empty()) {
        throw UsageError(fmt::format("{} with the {} kernel: {}", describe(s), kernel_name(k), why));
      }
    }
  }

  void run(ProbeContext& ctx) override {
    std::vector<Run> runs;
    for (const Shape& s : shapes(ctx.options.quick)) measure_shape(ctx, s, runs);
    for (Kernel k : kernels()) summarise(ctx, k, runs);
  }

 private:
  std::optional<int> batch_, heads_, kv_heads_, seq_, head_dim_;
  bool causal_ = false;
  std::string kernel_;
  bool sweep_ = false;

  Shape given_shape() const { return {*batch_, *heads_, kv_heads_.value_or(*heads_), *seq_, *head_dim_, causal_}; }

  std::vector<Kernel> kernels() const {
    if (!kernel_.empty()) return {kKernels.at(kernel_)};
    return {Kernel::wgmma, Kernel::mma_sync};
  }

  // A given shape; else --quick's (over --sweep too: CI-sized means small); else the sweep.
  std::vector<Shape> shapes(bool quick) const {
    if (batch_) return {given_shape()};
    if (!quick) return attention_check::sweep();
    std::vector<Shape> out;
    for (int d : kHeadDims)
      for (bool causal : {false, true}) out.push_back({kQuickBatch, kQuickHeads, kQuickHeads, kQuickSeq, d, causal});
    return out;
  }

  // Fresh inputs and the reference for `s`, then every kernel on them.
  void measure_shape(ProbeContext& ctx, const Shape& s, std::vector<Run>& runs) {
    Buffers b(s);
    const cudaStream_t stream = ctx.harness.stream();
    attention_check::fill_normal(b.q.get(), b.q.size(), ctx.rng(), stream);
    attention_check::fill_normal(b.k.get(), b.k.size(), ctx.rng(), stream);
    attention_check::fill_normal(b.v.get(), b.v.size(), ctx.rng(), stream);
    attention_check::reference_forward(b.q.get(), b.k.get(), b.v.get(), b.o_ref.get(), b.lse_ref.get(), s, stream);
    TK_CUDA(cudaStreamSynchronize(stream));
    for (Kernel k : kernels()) {
      if (const std::string why = attention::refusal(s, k); !why.empty()) {
        Result skipped(name(), params_json(k, s));
        skipped.status = Status::skipped;
        skipped.reason = why;
        ctx.add(std::move(skipped));
        continue;
      }
      runs.push_back(measure_kernel(ctx, k, s, b));
    }
  }

  Run measure_kernel(ProbeContext& ctx, Kernel k, const Shape& s, Buffers& b) {
    const attention::Forward forward(b.tensors(), s, k);
    SmClockBracket clock(ctx.device.sms);
    const ClockBracket bracket{[&](cudaStream_t st) { clock.begin(st); }, [&](cudaStream_t st) { clock.end(st); },
                               clock.window()};
    b.o.poison();
    b.lse.poison();
    const Measurement m = ctx.harness.time_kernel_rate(
        fmt::format("attention {} {}", kernel_name(k), describe(s)), [&](cudaStream_t st) { forward(st); },
        attention::flops(s) / 1e12, bracket);
    const auto errors = attention_check::compare_to_reference(b.o.get(), b.lse.get(), b.o_ref.get(),
                                                              b.lse_ref.get(), s, ctx.harness.stream());
    const auto pct_clock = pct_of_clock_peak(m, ctx.device.sms, hopper_flop_per_clock_per_sm("bf16"));
    const auto peaks = datasheet_peaks(ctx.device.name);

    Result r(name(), params_json(k, s));
    r.metric("tflops", m.stats, "TFLOP/s", Better::higher);
    r.value("pct_datasheet_peak", peaks ? Json(100 * m.stats.median / peaks->bf16) : Json(nullptr));
    if (pct_clock) {
      // Judged per clock: between runs TFLOP/s moved up to 29% with the power state, this under 4%.
      r.metric("pct_clock_peak", *pct_clock, "%", Better::higher);
      r.primary = "pct_clock_peak";
    }
    r.value("rel_error", errors.rel_error);
    r.value("worst_row_error", errors.worst_row_error);
    r.value("lse_error", errors.lse_error);
    const bool passed = errors.rel_error < kMaxRelError && errors.worst_row_error < kMaxRelError &&
                        errors.lse_error < kMaxLseError;
    r.checked({{"what", "||O - O_ref||_F / ||O_ref||_F, the same for the worst row, and max |LSE - LSE_ref| "
                        "against the fp32 reference"},
               {"value", errors.rel_error},
               {"max", kMaxRelError},
               {"worst_row_error", errors.worst_row_error},
               {"lse_error", errors.lse_error},
               {"lse_max", kMaxLseError}},
              passed);
    r.telemetry = m.telemetry;
    ctx.add(std::move(r));
    return {k, s, m.stats.median, pct_clock ? std::optional(pct_clock->median) : std::nullopt, errors, passed};
  }

  // One line per kernel: its range over the shapes, the best shape, the worst errors.
  void summarise(ProbeContext& ctx, Kernel k, const std::vector<Run>& runs) const {
    std::vector<const Run*> mine;
    for (const Run& r : runs)
      if (r.kernel == k) mine.push_back(&r);
    if (mine.empty()) return;
    const auto by_rate = [](const Run* a, const Run* b) { return a->tflops < b->tflops; };
    const Run& best = **std::max_element(mine.begin(), mine.end(), by_rate);
    const Run& worst = **std::min_element(mine.begin(), mine.end(), by_rate);
    double rel = 0, lse = 0;
    int failed = 0;
    const auto worse = [](double a, double b) { return std::isnan(b) || b > a ? b : a; };  // NaN: unwritten output
    for (const Run* r : mine) {
      rel = worse(rel, r->errors.worst_row_error);
      lse = worse(lse, r->errors.lse_error);
      failed += !r->passed;
    }
    const auto peaks = datasheet_peaks(ctx.device.name);
    ctx.finding(name(),
                fmt::format("{}: {:.1f}..{:.1f} TFLOP/s over {} shapes; best {} = {:.1f} TFLOP/s ({}{}); slowest {}; "
                            "largest errors: worst row relative {:.2e}, LSE {:.2e}; {} of {} failed the check",
                            kernel_name(k), worst.tflops, best.tflops, mine.size(), describe(best.shape), best.tflops,
                            peaks ? fmt::format("{:.1f}% of the datasheet peak", 100 * best.tflops / peaks->bf16)
                                  : std::string("no datasheet peak for this GPU"),
                            best.pct_clock_peak ? fmt::format(", {:.1f}% of the clock peak", *best.pct_clock_peak)
                                                : std::string(),
                            describe(worst.shape), rel, lse, failed, mine.size()));
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(AttentionProbe);

}  // namespace tkprobe
