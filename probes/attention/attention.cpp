// attention: the FlashAttention kernels written in the DSL (kernels/attention) against the
// tensor-core peaks, each checked against an fp32 reference on the same inputs.
//
// Per shape: fresh ~N(0, 1) bf16 Q, K, V drawn on the GPU, the fp32 reference once (untimed), then
// per kernel and pass (--pass): outputs poisoned, the pass timed with CUDA events (attention::flops
// per forward launch, attention::flops_backward = 2.5x that per backward launch), and its last output
// compared with the reference. The backward (wgmma kernels only) takes the wgmma forward's O and LSE
// and a fresh ~N(0, 1) dO; its reference is the fp32 backward on the same tensors. The SM clock is
// measured around every timed launch (probes/measure/clock_bracket.hpp: the kernels' interface has no
// room for a clock window), so each sample's rate is also set against the clock peak at that clock.
//
// --dtype e4m3: the wgmma forward at D = 128 on e4m3 Q, K, V (attention::Fp8Forward): the same
// fresh bf16 inputs quantized per tensor (kernels/attention/reference_fp8.hpp), the reference run on
// the dequantized values, the error bounds fp8 implies, rates against the e4m3 peaks. Its rows
// carry dtype e4m3.
//
// --varlen: the wgmma forward and backward (--pass) on a packed batch of sequences of those lengths
// (attention::VarlenForward, VarlenBackward: each sequence's queries are its keys), every sequence
// checked against the references on it alone; where all lengths are equal the dense pass is timed
// on the same tensors after the packed one, and each row carries the ratio.
//
// The suite (`tkprobe all`, and so the regression baseline) runs every kernel a caller can reach:
// bf16 forward and backward with the dQ path a caller gets by default, the deterministic dQ path's
// backward, the e4m3 forward on the D = 128 shapes, the varlen passes on a random mix, and the
// wgmma forward at D = 256 on the sweep's lengths.
#include "kernels/attention/attention.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/attention/reference.hpp"
#include "kernels/attention/reference_fp8.hpp"
#include "kernels/attention/reference_varlen.hpp"
#include "probes/attention/metrics.hpp"
#include "probes/attention/needs.hpp"
#include "probes/attention/varlen_lengths.hpp"
#include "probes/measure/clock_bracket.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::attention;  // this probe's metrics.json

namespace tkprobe {
namespace {

using attention::Kernel;
using attention::Shape;
using bf16 = __nv_bfloat16;

// --quick: small, and a length that is no multiple of any tile.
constexpr int kQuickBatch = 2, kQuickHeads = 4, kQuickSeq = 1000;
constexpr int kHeadDims[] = {64, 128};
// The head dims of the wgmma forward alone (attention::refusal).
constexpr bool wgmma_only(int head_dim) { return head_dim == 96 || head_dim == 256; }

// bf16 inputs and output put the relative error between 1e-3 and 1e-2 (8 mantissa bits); a
// wrong row or mask gives ~1. LSE is fp32 throughout, so its error is far smaller.
constexpr double kMaxRelError = 1e-2;
constexpr double kMaxLseError = 1e-2;
// A gradient's worst row (`dq_worst_row_error` and the like: the backward rows of results/h200/suite.json
// read up to 5e-3 at N = 16384), the longest sums of bf16 products; rows far below the typical norm are
// held to a floor of it (check::kRowFloor).
constexpr double kMaxGradientRowError = 2e-2;
// dQ and dK where a sequence has one key: 0 in exact arithmetic (P = 1, dS = 0); kernels leave the
// rounding of two fp32 dot products of dO and V (tests/gpu/kernel_bounds.hpp's bound).
constexpr double kMaxZeroGradient = 1e-3;

// --energy's window: NVML's energy counter steps about every 100 ms, so at least kMinEnergySteps steps.
constexpr double kMinEnergySeconds = 0.5, kMaxEnergySeconds = 3600;

const std::map<std::string, attention::Dtype> kDtypes = {{"bf16", attention::Dtype::bf16},
                                                         {"e4m3", attention::Dtype::e4m3}};
constexpr int kE4m3HeadDim = 128;  // the only head dim the e4m3 forward takes
constexpr int kSuiteWideHeadDim = 256;  // the suite's forward of the wgmma kernel alone
// The suite's packed batch (attention_probe::random_lengths): 16k tokens as the sweep's, 16 heads of 128.
const std::string kSuiteVarlen = "random:1";
constexpr int kSuiteVarlenHeads = 16;

const std::map<std::string, Kernel> kKernels = {{"wgmma", Kernel::wgmma}, {"mma-sync", Kernel::mma_sync}};

std::string kernel_name(Kernel k) { return k == Kernel::wgmma ? "wgmma" : "mma-sync"; }

const std::map<std::string, attention::DqPath> kDqPaths = {{"fastest", attention::DqPath::fastest},
                                                           {"deterministic", attention::DqPath::deterministic},
                                                           {"reduce", attention::DqPath::reducing}};

// What one timed launch runs: the forward, the backward (from the forward's O and LSE), or both
// back to back, as one training step's attention.
enum class Pass { fwd, bwd, fwd_bwd };
const std::map<std::string, std::vector<Pass>> kPasses = {
    {"fwd", {Pass::fwd}}, {"bwd", {Pass::bwd}}, {"fwd+bwd", {Pass::fwd_bwd}}, {"all", {Pass::fwd, Pass::bwd, Pass::fwd_bwd}}};

std::string pass_name(Pass p) { return p == Pass::fwd ? "fwd" : p == Pass::bwd ? "bwd" : "fwd+bwd"; }

template <class S>  // a Shape, or a packed batch's attention::Varlen
double pass_flops(Pass p, const S& s) {
  const double fwd = attention::flops(s), bwd = attention::flops_backward(s);
  return p == Pass::fwd ? fwd : p == Pass::bwd ? bwd : fwd + bwd;
}

std::string describe(const Shape& s) {
  const std::string keys = attention::keys(s) == s.seq ? "" : fmt::format(" Nk={}", attention::keys(s));
  return fmt::format("B={} H={} HKV={} N={}{} D={}{}", s.batch, s.heads, s.kv_heads, s.seq, keys, s.head_dim,
                     s.causal ? " causal" : "");
}

// seq_k only where it differs from seq, so rows of equal lengths keep their identity in reports.
Json params_json(Kernel k, const Shape& s, Pass p, const std::string& dtype = "bf16") {
  Json params = {{"kernel", kernel_name(k)},
                 {"pass", pass_name(p)},
                 {"head_dim", s.head_dim},
                 {"seq", s.seq},
                 {"batch", s.batch},
                 {"heads", s.heads},
                 {"kv_heads", s.kv_heads},
                 {"causal", s.causal},
                 {"dtype", dtype}};
  if (attention::keys(s) != s.seq) params["seq_k"] = attention::keys(s);
  return params;
}

// Inputs, outputs and the reference of one shape, on the GPU.
struct Buffers {
  explicit Buffers(const Shape& s)
      : q(rows(s, s.heads, s.seq) * s.head_dim),
        k(rows(s, s.kv_heads, attention::keys(s)) * s.head_dim),
        v(k.size()),
        o(q.size()),
        lse(rows(s, s.heads, s.seq)),
        o_ref(q.size()),
        lse_ref(lse.size()) {}
  static std::size_t rows(const Shape& s, int heads, int seq) { return std::size_t(s.batch) * heads * seq; }
  attention::Tensors tensors() { return {q.get(), k.get(), v.get(), o.get(), lse.get()}; }

  DeviceBuffer<bf16> q, k, v, o;
  DeviceBuffer<float> lse, o_ref, lse_ref;
};

// What the backward adds: dO, the gradients, and the fp32 reference's, on the forward's O and LSE.
struct Gradients {
  explicit Gradients(const Buffers& b)
      : d_o(b.q.size()), dq(b.q.size()), dk(b.k.size()), dv(b.v.size()),
        dq_ref(b.q.size()), dk_ref(b.k.size()), dv_ref(b.v.size()), delta(b.lse.size()) {}
  attention::BackwardTensors tensors(Buffers& b) {
    return {b.q.get(), b.k.get(), b.v.get(), b.o.get(), d_o.get(), b.lse.get(), dq.get(), dk.get(), dv.get()};
  }
  void poison() {
    dq.poison();
    dk.poison();
    dv.poison();
  }

  DeviceBuffer<bf16> d_o, dq, dk, dv;
  DeviceBuffer<float> dq_ref, dk_ref, dv_ref, delta;
};

// One measured kernel and pass on one shape.
struct Run {
  Kernel kernel;
  Pass pass;
  Shape shape;
  double tflops;
  std::optional<double> pct_clock_peak;
  double worst_row_error;           // the worst row of any output the pass wrote
  std::optional<double> lse_error;  // passes that ran the forward
  bool passed;
};

class AttentionProbe final : public Probe {
 public:
  std::string name() const override { return "attention"; }
  std::string summary() const override {
    return "FlashAttention forward and backward (the DSL's wgmma and mma.sync kernels): TFLOP/s, % of peaks, "
           "error vs fp32";
  }
  // The mma.sync forward runs on sm_80 and newer; the wgmma kernel's rows need sm_90a.
  std::vector<RowNeeds> row_needs() const override {
    return {{"wgmma kernel rows (bf16 and e4m3 forward, backward)", attention_probe::kWgmmaKernelNeeds}};
  }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--batch", batch_, "Batch size (with --heads, --seq and --head-dim; default: the sweep)");
    cmd.add_option("--heads", heads_, "Query heads");
    cmd.add_option("--kv-heads", kv_heads_, "Key/value heads, dividing --heads (default: --heads)");
    cmd.add_option("--seq", seq_, "Sequence length (queries, and keys unless --seq-k)");
    cmd.add_option("--seq-k", seq_k_, "Keys per sequence (default, or 0: --seq)");
    cmd.add_option("--head-dim", head_dim_, "Head dimension: 64, 96, 128 or 256 (96 and 256: the wgmma forward alone)");
    cmd.add_flag("--causal", causal_, "Causal mask: query i sees keys 0 .. i + seq-k - seq (the bottom-right corner)");
    cmd.add_option("--kernel", kernel_, "wgmma or mma-sync (default: both)")->check(CLI::IsMember(kKernels));
    cmd.add_option("--pass", pass_,
                   "fwd, bwd (the backward alone, from the forward's O and LSE; wgmma kernels only), fwd+bwd (both "
                   "in each timed launch) or all three (default fwd)")
        ->check(CLI::IsMember(kPasses));
    cmd.add_option("--dq", dq_,
                   "the backward's dQ path: fastest (the default: the path measured faster for the shape, today "
                   "reduce on every shape), deterministic (its own kernel, the same bits "
                   "every run) or reduce (reduced in fp32 by the dK/dV kernel with the TMA); rows the reducing "
                   "path made carry dq: reduce")
        ->check(CLI::IsMember(kDqPaths));
    cmd.add_option("--dtype", dtype_,
                   "bf16 (both kernels, both passes) or e4m3 (the wgmma forward at head dim 128: e4m3 Q, K, V with "
                   "per-tensor scales, bf16 O; default bf16)")
        ->check(CLI::IsMember(kDtypes));
    cmd.add_option("--energy", energy_s_,
                   fmt::format("Also measure each row's energy per call (energy_mj, power_w, tflop_per_j) with NVML's "
                               "energy counter, over this many seconds of back-to-back calls ({} to {}; default 0: "
                               "not measured)",
                               kMinEnergySeconds, kMaxEnergySeconds));
    cmd.add_option("--varlen", varlen_,
                   fmt::format("A packed batch for the wgmma kernels (--pass as for one shape), each sequence's "
                               "queries its keys: LENGTHS "
                               "separated by commas, or random:SEED (log-uniform {} to {}, {} tokens in all); with "
                               "--heads and --head-dim (--kv-heads, --causal optional)",
                               attention_probe::kShortest, attention_probe::kLongest, attention_probe::kRandomTokens));
    cmd.add_flag("--sweep", sweep_,
                 "16k tokens (B x N), hidden 2048 (D 64: 32 heads, D 128: 16), N 1024/4096/16384, causal and not "
                 "(the default without a shape)");
  }
  void validate() const override {
    if (energy_s_ != 0 && !(energy_s_ >= kMinEnergySeconds && energy_s_ <= kMaxEnergySeconds)) {
      throw UsageError(
          fmt::format("--energy {}: give 0 (not measured) or a window of {} to {} seconds (the "
                      "counter steps about every 100 ms)",
                      energy_s_, kMinEnergySeconds, kMaxEnergySeconds));
    }
    if (dq_ != "fastest" && !any_backward()) {
      throw UsageError(fmt::format("--dq {} picks the backward's dQ path: give it --pass bwd, fwd+bwd or all", dq_));
    }
    if (!varlen_.empty()) return validate_varlen();
    const int given = batch_.has_value() + heads_.has_value() + seq_.has_value() + head_dim_.has_value();
    const bool shape_options = given > 0 || kv_heads_ || seq_k_ || causal_;
    if (sweep_ && shape_options) {
      throw UsageError(
          "--sweep runs the standard shapes: give it no --batch, --heads, --kv-heads, --seq, "
          "--seq-k, --head-dim or --causal");
    }
    if (shape_options && given != 4) {
      throw UsageError(
          "--batch, --heads, --seq, --head-dim: give all four (--kv-heads, --seq-k and --causal are "
          "optional), or none for the sweep");
    }
    if (kernel_ == "mma-sync" && any_backward()) {
      throw UsageError(fmt::format("--pass {} --kernel mma-sync: the backward is written for the wgmma kernel "
                                   "only (give --kernel wgmma, or --pass fwd)",
                                   pass_));
    }
    if (e4m3()) {
      if (kernel_ == "mma-sync") {
        throw UsageError("--dtype e4m3 --kernel mma-sync: the e4m3 forward is written for the wgmma kernel only "
                         "(give --kernel wgmma, or --dtype bf16)");
      }
      if (pass_ != "fwd") {
        throw UsageError(fmt::format("--dtype e4m3 --pass {}: the e4m3 kernel is a forward (give --pass fwd, or "
                                     "--dtype bf16)",
                                     pass_));
      }
    }
    if (given == 0) return;
    const Shape s = given_shape();
    if (e4m3()) {
      if (const std::string why = attention::refusal(s, attention::Dtype::e4m3); !why.empty()) {
        throw UsageError(fmt::format("{} with --dtype e4m3: {}", describe(s), why));
      }
      return;
    }
    for (Kernel k : kernels()) {
      // Not asked for by name, the mma.sync kernel's rows of a head dim it lacks say `skipped` why.
      if (k == Kernel::mma_sync && kernel_.empty() && wgmma_only(s.head_dim)) continue;
      if (const std::string why = attention::refusal(s, k); !why.empty()) {
        throw UsageError(fmt::format("{} with the {} kernel: {}", describe(s), kernel_name(k), why));
      }
    }
    if (const std::string why = attention::backward_refusal(s); any_backward() && !why.empty()) {
      throw UsageError(fmt::format("{} --pass {}: {} (give --pass fwd)", describe(s), pass_, why));
    }
  }

  // The suite (and so the baseline) holds every pass and path, so a slower one fails the gate too.
  void use_suite_settings() override {
    pass_ = "all";
    dq_ = "fastest";  // what a caller gets by default
    suite_ = true;
  }

  void run(ProbeContext& ctx) override {
    if (!varlen_.empty()) {
      run_varlen(ctx, varlen_, varlen_shape(varlen_, *heads_, kv_heads_.value_or(*heads_), *head_dim_, causal_),
                 kPasses.at(pass_));
    } else if (!e4m3()) {
      run_bf16(ctx);
    }
    if (e4m3() || suite_) run_e4m3(ctx);
    if (suite_) run_wide_head_dim(ctx);
    if (suite_) {  // a packed batch, the random mix at the sweep's D = 128 (16 heads): each kernel once
      for (bool causal : {false, true})
        run_varlen(ctx, kSuiteVarlen, varlen_shape(kSuiteVarlen, kSuiteVarlenHeads, kSuiteVarlenHeads, 128, causal),
                   {Pass::fwd, Pass::bwd});
    }
    if (energy_s_ > 0) summarise_energy(ctx);
  }

 private:
  std::optional<int> batch_, heads_, kv_heads_, seq_, seq_k_, head_dim_;
  bool causal_ = false;
  std::string kernel_;
  std::string pass_ = "fwd";
  std::string dq_ = "fastest";
  bool sweep_ = false;
  std::string dtype_ = "bf16";
  bool suite_ = false;  // also the deterministic backward and the e4m3 forward (use_suite_settings)
  std::string varlen_;  // --varlen's lengths, as given
  double energy_s_ = 0;     // --energy: each row's energy window, 0 for none
  std::string energy_why_;  // the first row whose energy could not be had, and why
  struct RowEnergy {
    std::string label;
    double watts, tflop_per_j;
  };
  std::vector<RowEnergy> energies_;  // for the finding

  bool e4m3() const { return dtype_ == "e4m3"; }

  void validate_varlen() const {
    if (batch_ || seq_ || seq_k_ || sweep_) {
      throw UsageError("--varlen gives the sequences: give it no --batch, --seq, --seq-k or --sweep");
    }
    if (!heads_ || !head_dim_)
      throw UsageError("--varlen needs --heads and --head-dim (--kv-heads, --causal optional)");
    if (e4m3() || kernel_ == "mma-sync") {
      throw UsageError("--varlen runs the wgmma kernels in bf16: give it no --dtype e4m3 or --kernel mma-sync");
    }
    const attention::Varlen s = varlen_shape(varlen_, *heads_, kv_heads_.value_or(*heads_), *head_dim_, causal_);
    if (const std::string why = attention::refusal(attention::Tensors{}, s); !why.empty()) {
      throw UsageError(fmt::format("--varlen {}: {}", varlen_, why));
    }
    const Shape one_row{1, s.heads, s.kv_heads, 1, s.head_dim, s.causal};  // the head and head-dim rules
    if (const std::string why = attention::backward_refusal(one_row); any_backward() && !why.empty()) {
      throw UsageError(fmt::format("--varlen {} --pass {}: {} (give --pass fwd)", varlen_, pass_, why));
    }
  }

  // The packed batch `spec` names (varlen_lengths), each sequence's queries its keys; throws
  // UsageError on a bad spec.
  static attention::Varlen varlen_shape(const std::string& spec, int heads, int kv_heads, int head_dim, bool causal) {
    std::string why;
    const std::vector<int> lengths = attention_probe::varlen_lengths(spec, why);
    if (!why.empty()) throw UsageError(why);
    const std::vector<int> offsets = attention::offsets_of(lengths);
    return {offsets, offsets, heads, kv_heads, head_dim, causal};
  }

  static Json varlen_params(const std::string& spec, const attention::Varlen& s, Pass p) {
    return {{"kernel", "wgmma"},     {"pass", pass_name(p)},   {"varlen", spec},   {"sequences", s.batch()},
            {"tokens", s.total_q()}, {"head_dim", s.head_dim}, {"heads", s.heads}, {"kv_heads", s.kv_heads},
            {"causal", s.causal},    {"dtype", "bf16"}};
  }

  // A packed batch's tensors on the GPU: (total, heads, D) each, LSE [heads][total_q].
  struct VarlenBuffers {
    explicit VarlenBuffers(const attention::Varlen& s)
        : q(std::size_t(s.total_q()) * s.heads * s.head_dim),
          k(std::size_t(s.total_k()) * s.kv_heads * s.head_dim),
          v(k.size()),
          o(q.size()),
          d_o(q.size()),
          dq(q.size()),
          dk(k.size()),
          dv(k.size()),
          lse(std::size_t(s.total_q()) * s.heads) {}
    attention::Tensors forward() { return {q.get(), k.get(), v.get(), o.get(), lse.get()}; }
    attention::BackwardTensors backward() {
      return {q.get(), k.get(), v.get(), o.get(), d_o.get(), lse.get(), dq.get(), dk.get(), dv.get()};
    }
    DeviceBuffer<bf16> q, k, v, o, d_o, dq, dk, dv;
    DeviceBuffer<float> lse;
  };

  // The packed batch's `passes` on fresh inputs: the forward's row, then the backward's.
  void run_varlen(ProbeContext& ctx, const std::string& spec, const attention::Varlen& s,
                  const std::vector<Pass>& passes) {
    const auto runs = [&](Pass p) { return std::find(passes.begin(), passes.end(), p) != passes.end(); };
    if (const std::string why = why_not_runnable(attention_probe::kWgmmaKernelNeeds, ctx.device); !why.empty()) {
      for (Pass p : passes) add_skipped(ctx, varlen_params(spec, s, p), why);
      return;
    }
    VarlenBuffers b(s);
    const cudaStream_t stream = ctx.harness.stream();
    for (DeviceBuffer<bf16>* x : {&b.q, &b.k, &b.v})
      attention_check::fill_normal(x->get(), x->size(), ctx.rng(), stream);
    const attention::VarlenForward forward(b.forward(), s);
    if (runs(Pass::fwd)) measure_varlen_forward(ctx, spec, s, b, forward);
    std::vector<Pass> backward;
    std::copy_if(passes.begin(), passes.end(), std::back_inserter(backward), [](Pass p) { return p != Pass::fwd; });
    if (!backward.empty()) measure_varlen_backward(ctx, spec, s, b, forward, backward);
  }

  // The forward: outputs poisoned, timed, every sequence against the reference on it alone; with
  // equal lengths, the dense forward on the same tensors beside it.
  void measure_varlen_forward(ProbeContext& ctx, const std::string& spec, const attention::Varlen& s, VarlenBuffers& b,
                              const attention::VarlenForward& forward) {
    Result r(name(), varlen_params(spec, s, Pass::fwd));
    b.o.poison();
    b.lse.poison();
    const double tflop = attention::flops(s) / 1e12;
    const Measurement m =
        time_pass(ctx, varlen_label(spec, s, Pass::fwd, false), tflop, [&](cudaStream_t st) { forward(st); });
    add_rates(ctx, r, m, tflop);
    Json check = {{"what",
                   "the worst sequence's ||O - O_ref||_F / ||O_ref||_F, worst row and max |LSE - LSE_ref| "
                   "against the fp32 reference run on each sequence alone"}};
    double worst_row = 0;
    const bool passed = check_varlen_output(ctx, s, b, r, check, worst_row);
    r.checked(std::move(check), passed);
    if (equal_lengths(s)) {
      const attention::Forward dense(b.forward(), dense_of(s), Kernel::wgmma, dense_forward_layout(s));
      time_dense_beside(ctx, s, Pass::fwd, r, m, [&](cudaStream_t st) { dense(st); });
    }
    ctx.add(std::move(r));
  }

  // The backward alone (from the forward's O and LSE) or after the forward in each launch (`passes`),
  // on one dO, every sequence's gradients against the reference backward on it alone.
  void measure_varlen_backward(ProbeContext& ctx, const std::string& spec, const attention::Varlen& s, VarlenBuffers& b,
                               const attention::VarlenForward& forward, const std::vector<Pass>& passes) {
    const cudaStream_t stream = ctx.harness.stream();
    const attention::BackwardOptions options{.dq = kDqPaths.at(dq_)};
    const bool reducing = attention::dq_path(s, options) == attention::DqPath::reducing;
    attention_check::fill_normal(b.d_o.get(), b.d_o.size(), ctx.rng(), stream);
    forward(stream);
    const attention::VarlenBackward backward(b.backward(), s, {}, options);
    for (Pass p : passes) {
      for (DeviceBuffer<bf16>* g : {&b.dq, &b.dk, &b.dv}) g->poison();
      if (p == Pass::fwd_bwd) {
        b.o.poison();
        b.lse.poison();
      }
      const double tflop = pass_flops(p, s) / 1e12;
      const Measurement m = time_pass(ctx, varlen_label(spec, s, p, reducing), tflop, [&](cudaStream_t st) {
        if (p == Pass::fwd_bwd) forward(st);
        backward(st);
      });
      Json params = varlen_params(spec, s, p);
      if (reducing) params["dq"] = "reduce";
      Result r(name(), std::move(params));
      add_rates(ctx, r, m, tflop);
      const auto e = attention_check::compare_varlen_backward(b.backward(), s, stream);
      Json check = gradient_check(p);
      double worst_row = 0;
      bool passed = add_gradient_errors(r, check, e, worst_row);
      check["one_key_max_abs"] = e.zero_gradient_max_abs;  // dQ, dK of sequences of one key: 0 exactly
      check["one_key_max"] = kMaxZeroGradient;
      passed &= e.zero_gradient_max_abs <= kMaxZeroGradient;
      if (p == Pass::fwd_bwd) passed &= check_varlen_output(ctx, s, b, r, check, worst_row);
      r.checked(std::move(check), passed);
      if (equal_lengths(s)) {  // the dense passes on the same tensors, after the check
        const Shape dense = dense_of(s);
        const attention::Forward dense_forward(b.forward(), dense, Kernel::wgmma, dense_forward_layout(s));
        const attention::ForwardLayout f = dense_forward_layout(s);
        const attention::Backward dense_backward(b.backward(), dense, {f.q, f.k, f.v, f.o, f.o, f.q, f.k, f.v},
                                                 options);
        // The dense backward reads LSE as [B][H][N], the packed pass's is [H][total]: its own forward's first.
        if (p == Pass::bwd) dense_forward(stream);
        time_dense_beside(ctx, s, p, r, m, [&](cudaStream_t st) {
          if (p == Pass::fwd_bwd) dense_forward(st);
          dense_backward(st);
        });
      }
      ctx.add(std::move(r));
    }
  }

  static std::string varlen_label(const std::string& spec, const attention::Varlen& s, Pass p, bool reducing) {
    return fmt::format("attention wgmma {} varlen {} ({} sequences, {} tokens{}){}", pass_name(p), spec, s.batch(),
                       s.total_q(), s.causal ? ", causal" : "", reducing ? " dq reduce" : "");
  }

  // O and LSE of every sequence against the reference on it alone, into the row and its check.
  static bool check_varlen_output(ProbeContext& ctx, const attention::Varlen& s, VarlenBuffers& b, Result& r,
                                  Json& check, double& worst_row) {
    const auto e = attention_check::compare_varlen_to_reference(b.forward(), s, {}, ctx.harness.stream());
    worst_row = worse(worst_row, e.worst_row_error);
    return add_output_errors(r, check, e);
  }

  static bool equal_lengths(const attention::Varlen& s) {
    for (int b = 0; b < s.batch(); ++b)
      if (s.queries(b) != s.queries(0)) return false;
    return s.queries(0) > 0;
  }

  // Equal lengths n: the packed tensors are (B, n, H, D), which the dense passes read in place.
  static Shape dense_of(const attention::Varlen& s) {
    return {s.batch(), s.heads, s.kv_heads, s.queries(0), s.head_dim, s.causal};
  }
  static attention::ForwardLayout dense_forward_layout(const attention::Varlen& s) {
    const std::int64_t n = s.queries(0), d = s.head_dim;
    const auto at = [&](int heads) { return attention::Strides{n * heads * d, d, heads * d, 1}; };
    return {at(s.heads), at(s.kv_heads), at(s.kv_heads), at(s.heads)};
  }

  // The dense pass `p` (`dense_launch`) timed on the varlen row's tensors: its rate, and the varlen
  // pass's over it, per second and per clock.
  void time_dense_beside(ProbeContext& ctx, const attention::Varlen& s, Pass p, Result& r, const Measurement& varlen,
                         const std::function<void(cudaStream_t)>& dense_launch) {
    const Shape dense = dense_of(s);
    const Measurement m =
        time_pass(ctx, fmt::format("attention wgmma {} {}, the varlen row's tensors", pass_name(p), describe(dense)),
                  pass_flops(p, dense) / 1e12, dense_launch);
    r.value(metric::dense_tflops, m.stats.median);
    r.value(metric::vs_dense, varlen.stats.median / m.stats.median);
    Json per_clock = nullptr;  // where this GPU's clock peak is known (add_rates)
    if (const int flop_per_clock = flop_per_clock_per_sm(ctx.device, "bf16"); flop_per_clock > 0) {
      const auto varlen_clock = pct_of_clock_peak(varlen, ctx.device.sms, flop_per_clock);
      const auto dense_clock = pct_of_clock_peak(m, ctx.device.sms, flop_per_clock);
      if (varlen_clock && dense_clock) per_clock = varlen_clock->median / dense_clock->median;
    }
    r.value(metric::vs_dense_per_clock, per_clock);
  }

  void run_bf16(ProbeContext& ctx) {
    Runs runs;
    for (const Shape& s : shapes(ctx.options.quick, attention::Dtype::bf16)) measure_shape(ctx, s, runs);
    for (Pass p : kPasses.at(pass_))
      for (Kernel k : kernels()) summarise(ctx, k, pass_name(p), runs.by_pass(p));
    if (!runs.deterministic.empty()) summarise(ctx, Kernel::wgmma, "bwd, deterministic dQ", runs.deterministic);
  }

  void run_e4m3(ProbeContext& ctx) {
    std::vector<Run> runs;
    const std::string why = why_not_runnable(attention_probe::kWgmmaKernelNeeds, ctx.device);
    for (const Shape& s : shapes(ctx.options.quick, attention::Dtype::e4m3)) {
      if (why.empty()) {
        runs.push_back(measure_e4m3(ctx, s));
        continue;
      }
      add_skipped(ctx, params_json(Kernel::wgmma, s, Pass::fwd, "e4m3"), why);
    }
    summarise(ctx, Kernel::wgmma, "fwd e4m3", runs, "e4m3");
  }

  // The suite's forward at kSuiteWideHeadDim, the wgmma kernel's alone: the sweep's lengths at
  // hidden 2048 (--quick: its shape), causal and not.
  void run_wide_head_dim(ProbeContext& ctx) {
    std::vector<Shape> wide = attention_check::sweep_at(kSuiteWideHeadDim);
    if (ctx.options.quick) {
      wide.clear();
      for (bool causal : {false, true})
        wide.push_back({kQuickBatch, kQuickHeads, kQuickHeads, kQuickSeq, kSuiteWideHeadDim, causal});
    }
    std::vector<Run> runs;
    for (const Shape& s : wide) {
      if (const std::string why = why_not(ctx, Kernel::wgmma, s); !why.empty()) {
        add_skipped(ctx, params_json(Kernel::wgmma, s, Pass::fwd), why);
        continue;
      }
      Buffers b(s);
      fill_inputs(ctx, s, b);
      runs.push_back(measure_forward(ctx, Kernel::wgmma, s, b));
    }
    summarise(ctx, Kernel::wgmma, fmt::format("fwd, head dim {}", kSuiteWideHeadDim), runs);
  }

  bool has(Pass p) const {
    const auto& passes = kPasses.at(pass_);
    return std::find(passes.begin(), passes.end(), p) != passes.end();
  }
  bool any_backward() const { return has(Pass::bwd) || has(Pass::fwd_bwd); }

  Shape given_shape() const {
    return {*batch_, *heads_, kv_heads_.value_or(*heads_), *seq_, *head_dim_, causal_, seq_k_.value_or(0)};
  }

  std::vector<Kernel> kernels() const {
    if (!kernel_.empty()) return {kKernels.at(kernel_)};
    return {Kernel::wgmma, Kernel::mma_sync};
  }

  // A given shape; else --quick's (over --sweep too: CI-sized means small); else the sweep. With
  // e4m3, their head-dim-128 shapes.
  std::vector<Shape> shapes(bool quick, attention::Dtype dtype) const {
    if (batch_) return {given_shape()};
    const bool e4m3 = dtype == attention::Dtype::e4m3;
    std::vector<Shape> out;
    if (!quick) {
      for (const Shape& s : attention_check::sweep())
        if (!e4m3 || s.head_dim == kE4m3HeadDim) out.push_back(s);
      return out;
    }
    for (int d : kHeadDims)
      for (bool causal : {false, true})
        if (!e4m3 || d == kE4m3HeadDim) out.push_back({kQuickBatch, kQuickHeads, kQuickHeads, kQuickSeq, d, causal});
    return out;
  }

  // The bf16 runs: by kernel and pass, and the deterministic dQ path's backward apart.
  struct Runs {
    std::vector<Run> all, deterministic;
    std::vector<Run> by_pass(Pass p) const {
      std::vector<Run> out;
      std::copy_if(all.begin(), all.end(), std::back_inserter(out), [p](const Run& r) { return r.pass == p; });
      return out;
    }
  };

  // A row that cannot run here, and why.
  void add_skipped(ProbeContext& ctx, Json params, const std::string& why) const {
    Result r(name(), std::move(params));
    r.status = Status::skipped;
    r.reason = why;
    ctx.add(std::move(r));
  }

  // Fresh inputs into `b` and the reference on them.
  static void fill_inputs(ProbeContext& ctx, const Shape& s, Buffers& b) {
    const cudaStream_t stream = ctx.harness.stream();
    attention_check::fill_normal(b.q.get(), b.q.size(), ctx.rng(), stream);
    attention_check::fill_normal(b.k.get(), b.k.size(), ctx.rng(), stream);
    attention_check::fill_normal(b.v.get(), b.v.size(), ctx.rng(), stream);
    attention_check::reference_forward(b.q.get(), b.k.get(), b.v.get(), b.o_ref.get(), b.lse_ref.get(), s, stream);
    TK_CUDA(cudaStreamSynchronize(stream));
  }

  // Fresh inputs and the reference for `s`, then every kernel and pass on them.
  void measure_shape(ProbeContext& ctx, const Shape& s, Runs& runs) {
    Buffers b(s);
    fill_inputs(ctx, s, b);
    for (Kernel k : kernels()) {
      if (const std::string why = why_not(ctx, k, s); !why.empty()) {
        for (Pass p : passes_of(k)) add_skipped(ctx, params_json(k, s, p), why);
        continue;
      }
      if (has(Pass::fwd)) runs.all.push_back(measure_forward(ctx, k, s, b));
      if (k != Kernel::wgmma || !any_backward()) continue;
      const attention::BackwardOptions chosen{.dq = kDqPaths.at(dq_)};
      std::vector<BackwardPlan> plans{{chosen, kPasses.at(pass_), &runs.all}};
      // The suite also guards the deterministic path where the default is another: its backward alone.
      if (suite_ && attention::dq_path(s, chosen) != attention::DqPath::deterministic)
        plans.push_back({{.dq = attention::DqPath::deterministic}, {Pass::bwd}, &runs.deterministic});
      measure_backward(ctx, s, b, plans);
    }
  }

  // Why kernel `k` cannot run `s` here: the shape's refusal, or the GPU or build lacking sm_90a.
  static std::string why_not(ProbeContext& ctx, Kernel k, const Shape& s) {
    if (std::string why = attention::refusal(s, k); !why.empty()) return why;
    return k == Kernel::wgmma ? why_not_runnable(attention_probe::kWgmmaKernelNeeds, ctx.device) : "";
  }

  // One dQ path's backward: the passes it runs and where its runs go.
  struct BackwardPlan {
    attention::BackwardOptions options;
    std::vector<Pass> passes;
    std::vector<Run>* runs;
  };

  // The passes a kernel runs: the backward exists for the wgmma kernel alone.
  std::vector<Pass> passes_of(Kernel k) const {
    if (k == Kernel::wgmma) return kPasses.at(pass_);
    return has(Pass::fwd) ? std::vector<Pass>{Pass::fwd} : std::vector<Pass>{};
  }

  // Times `launch` (`tflop` of work a launch) with the SM clock bracketed around every launch.
  Measurement time_pass(ProbeContext& ctx, const std::string& label, double tflop,
                        const std::function<void(cudaStream_t)>& launch) {
    SmClockBracket clock(ctx.device.sms);
    const ClockBracket bracket{[&](cudaStream_t st) { clock.begin(st); }, [&](cudaStream_t st) { clock.end(st); },
                               clock.window()};
    Measurement m = ctx.harness.time_kernel_rate(label, launch, tflop, bracket);
    if (energy_s_ > 0) {
      std::string why;
      m.energy = ctx.harness.energy_per_call(launch, tflop / m.stats.median, energy_s_, why);
      if (m.energy) energies_.push_back({label, m.energy->watts, tflop_per_joule(tflop, *m.energy)});
      if (!m.energy && energy_why_.empty()) energy_why_ = fmt::format("{}: {}", label, why);
    }
    return m;
  }

  static double tflop_per_joule(double tflop_per_call, const EnergyPerCall& e) {
    return tflop_per_call / e.joules_per_call;
  }

  // The row's rates: TFLOP/s, % of the datasheet and (judged) % of the clock peak, both of `dtype`'s
  // tensor rate (e4m3: twice bf16's per clock); under --energy, the energy per call (null where NVML
  // could not give it).
  std::optional<double> add_rates(ProbeContext& ctx, Result& r, const Measurement& m, double tflop_per_call,
                                  const std::string& dtype = "bf16") const {
    if (energy_s_ > 0) {
      const auto& e = m.energy;
      r.value(metric::energy_mj, e ? Json(1e3 * e->joules_per_call) : Json(nullptr));
      r.value(metric::power_w, e ? Json(e->watts) : Json(nullptr));
      r.value(metric::energy_ms_per_call, e ? Json(1e3 * e->seconds_per_call) : Json(nullptr));
      r.value(metric::tflop_per_j, e ? Json(tflop_per_joule(tflop_per_call, *e)) : Json(nullptr));
    }
    const int flop_per_clock = flop_per_clock_per_sm(ctx.device, dtype);  // 0: no clock peak known here
    const auto pct_clock =
        flop_per_clock > 0 ? pct_of_clock_peak(m, ctx.device.sms, flop_per_clock) : std::optional<Stats>();
    const auto peaks = datasheet_peaks(ctx.device.name);
    r.metric(metric::tflops, m.stats, "TFLOP/s", Better::higher);
    const double peak = peaks ? (dtype == "e4m3" ? peaks->fp8 : peaks->bf16) : 0;
    r.value(metric::pct_datasheet_peak, peak > 0 ? Json(100 * m.stats.median / peak) : Json(nullptr));
    r.telemetry = m.telemetry;
    if (!pct_clock) return std::nullopt;
    // Judged per clock: between runs TFLOP/s moved up to 29% with the power state, this under 4%.
    r.metric(metric::pct_clock_peak, *pct_clock, "%", Better::higher);
    r.primary = "pct_clock_peak";
    return pct_clock->median;
  }

  // O and LSE against the reference: adds them to `r`'s check fields; whether they pass.
  static bool check_output(ProbeContext& ctx, const Shape& s, Buffers& b, Result& r, Json& check,
                           attention_check::Errors& errors) {
    errors = attention_check::compare_to_reference(b.o.get(), b.lse.get(), b.o_ref.get(), b.lse_ref.get(), s,
                                                   ctx.harness.stream());
    return add_output_errors(r, check, errors);
  }

  // O's and LSE's errors, as the row's values and in its check; whether they are within the bounds.
  static bool add_output_errors(Result& r, Json& check, const attention_check::Errors& e) {
    r.value(metric::rel_error, e.rel_error);
    r.value(metric::worst_row_error, e.worst_row_error);
    r.value(metric::lse_error, e.lse_error);
    check["value"] = e.rel_error;
    check["max"] = kMaxRelError;
    check["worst_row_error"] = e.worst_row_error;
    check["lse_error"] = e.lse_error;
    check["lse_max"] = kMaxLseError;
    return e.rel_error < kMaxRelError && e.worst_row_error < kMaxRelError && e.lse_error < kMaxLseError;
  }

  Run measure_forward(ProbeContext& ctx, Kernel k, const Shape& s, Buffers& b) {
    const attention::Forward forward(b.tensors(), s, k);
    b.o.poison();
    b.lse.poison();
    const Measurement m = time_pass(ctx, fmt::format("attention {} fwd {}", kernel_name(k), describe(s)),
                                    pass_flops(Pass::fwd, s) / 1e12, [&](cudaStream_t st) { forward(st); });
    Result r(name(), params_json(k, s, Pass::fwd));
    const auto pct_clock = add_rates(ctx, r, m, pass_flops(Pass::fwd, s) / 1e12);
    Json check = {{"what", "||O - O_ref||_F / ||O_ref||_F, the same for the worst row, and max |LSE - LSE_ref| "
                           "against the fp32 reference"}};
    attention_check::Errors errors{};
    const bool passed = check_output(ctx, s, b, r, check, errors);
    r.checked(std::move(check), passed);
    ctx.add(std::move(r));
    return {k, Pass::fwd, s, m.stats.median, pct_clock, errors.worst_row_error, errors.lse_error, passed};
  }

  // The e4m3 forward on one shape: fresh bf16 inputs quantized per tensor, the fp32 reference on
  // their dequantized values, O and LSE poisoned, the forward (V^T and the kernel) timed with the
  // bf16 forward's FLOPs, O and LSE checked against the bounds fp8 implies (attention_fp8.hpp).
  Run measure_e4m3(ProbeContext& ctx, const Shape& s) {
    Buffers b(s);
    DeviceBuffer<__nv_fp8_e4m3> q8(b.q.size()), k8(b.k.size()), v8(b.v.size());
    const cudaStream_t stream = ctx.harness.stream();
    attention_check::fill_normal(b.q.get(), b.q.size(), ctx.rng(), stream);
    attention_check::fill_normal(b.k.get(), b.k.size(), ctx.rng(), stream);
    attention_check::fill_normal(b.v.get(), b.v.size(), ctx.rng(), stream);
    const float q_scale = attention_check::quantize_e4m3(b.q.get(), q8.get(), b.q.size(), stream);
    const float k_scale = attention_check::quantize_e4m3(b.k.get(), k8.get(), b.k.size(), stream);
    const float v_scale = attention_check::quantize_e4m3(b.v.get(), v8.get(), b.v.size(), stream);
    attention_check::reference_forward(b.q.get(), b.k.get(), b.v.get(), b.o_ref.get(), b.lse_ref.get(), s, stream);
    TK_CUDA(cudaStreamSynchronize(stream));
    const attention::Fp8Forward forward({q8.get(), k8.get(), v8.get(), q_scale, k_scale, v_scale, b.o.get(), b.lse.get()},
                                        s);
    b.o.poison();
    b.lse.poison();
    const Measurement m = time_pass(ctx, fmt::format("attention wgmma fwd e4m3 {}", describe(s)),
                                    pass_flops(Pass::fwd, s) / 1e12, [&](cudaStream_t st) { forward(st); });
    Result r(name(), params_json(Kernel::wgmma, s, Pass::fwd, "e4m3"));
    const auto pct_clock = add_rates(ctx, r, m, pass_flops(Pass::fwd, s) / 1e12, "e4m3");
    const auto e = attention_check::compare_to_reference(b.o.get(), b.lse.get(), b.o_ref.get(), b.lse_ref.get(), s,
                                                         stream);
    r.value(metric::rel_error, e.rel_error);
    r.value(metric::worst_row_error, e.worst_row_error);
    r.value(metric::lse_error, e.lse_error);
    r.value(metric::q_scale, q_scale);
    r.value(metric::k_scale, k_scale);
    r.value(metric::v_scale, v_scale);
    const bool passed = e.rel_error < attention_check::kE4m3MaxRelError &&
                        e.worst_row_error < attention_check::kE4m3MaxRowError && e.lse_error < kMaxLseError;
    r.checked({{"what", "||O - O_ref||_F / ||O_ref||_F, the same for the worst row, and max |LSE - LSE_ref| against "
                        "the fp32 reference on the dequantized inputs; bounds from P's e4m3 rounding (2^-4 relative)"},
               {"value", e.rel_error},
               {"max", attention_check::kE4m3MaxRelError},
               {"worst_row_error", e.worst_row_error},
               {"worst_row_max", attention_check::kE4m3MaxRowError},
               {"lse_error", e.lse_error},
               {"lse_max", kMaxLseError}},
              passed);
    ctx.add(std::move(r));
    return {Kernel::wgmma, Pass::fwd, s, m.stats.median, pct_clock, e.worst_row_error, e.lse_error, passed};
  }

  // The wgmma backward on each plan's dQ path, alone and after the forward in each launch (the plan's
  // passes), on one dO: O and LSE come from the wgmma forward, and the fp32 reference backward, run
  // once for every plan, takes the same O, LSE and dO.
  void measure_backward(ProbeContext& ctx, const Shape& s, Buffers& b, const std::vector<BackwardPlan>& plans) {
    const cudaStream_t stream = ctx.harness.stream();
    const attention::Forward forward(b.tensors(), s, Kernel::wgmma);
    Gradients g(b);
    attention_check::fill_normal(g.d_o.get(), g.d_o.size(), ctx.rng(), stream);
    forward(stream);
    attention_check::reference_backward(b.q.get(), b.k.get(), b.v.get(), b.o.get(), g.d_o.get(), b.lse.get(),
                                        g.dq_ref.get(), g.dk_ref.get(), g.dv_ref.get(), g.delta.get(), s, stream);
    TK_CUDA(cudaStreamSynchronize(stream));
    for (const BackwardPlan& plan : plans) measure_backward_plan(ctx, s, b, g, forward, plan);
  }

  void measure_backward_plan(ProbeContext& ctx, const Shape& s, Buffers& b, Gradients& g,
                             const attention::Forward& forward, const BackwardPlan& plan) {
    const bool reducing = attention::dq_path(s, plan.options) == attention::DqPath::reducing;
    const attention::Backward backward(g.tensors(b), s, {}, plan.options);
    for (Pass p : {Pass::bwd, Pass::fwd_bwd}) {
      if (std::find(plan.passes.begin(), plan.passes.end(), p) == plan.passes.end()) continue;
      g.poison();
      if (p == Pass::fwd_bwd) {
        b.o.poison();
        b.lse.poison();
      }
      const Measurement m = time_pass(
          ctx, fmt::format("attention wgmma {} {}{}", pass_name(p), describe(s), reducing ? " dq reduce" : ""),
          pass_flops(p, s) / 1e12, [&](cudaStream_t st) {
            if (p == Pass::fwd_bwd) forward(st);
            backward(st);
          });
      plan.runs->push_back(backward_row(ctx, s, b, g, p, m, reducing));
    }
  }

  // A backward row: its rates, and each gradient (plus O and LSE when the pass ran the forward)
  // against the reference.
  // Rows the reducing path made (--dq reduce, or fastest where attention::dq_path picks it) carry
  // "dq": "reduce"; the deterministic path's carry no such key, so its rows keep their names.
  Run backward_row(ProbeContext& ctx, const Shape& s, Buffers& b, Gradients& g, Pass p, const Measurement& m,
                   bool reducing) {
    Json params = params_json(Kernel::wgmma, s, p);
    if (reducing) params["dq"] = "reduce";
    Result r(name(), std::move(params));
    const auto pct_clock = add_rates(ctx, r, m, pass_flops(p, s) / 1e12);
    const auto e = attention_check::compare_backward(g.dq.get(), g.dk.get(), g.dv.get(), g.dq_ref.get(),
                                                     g.dk_ref.get(), g.dv_ref.get(), s, ctx.harness.stream());
    Json check = gradient_check(p);
    double worst_row = 0;
    bool passed = add_gradient_errors(r, check, e, worst_row);
    std::optional<double> lse_error;
    if (p == Pass::fwd_bwd) {
      attention_check::Errors fe{};
      passed &= check_output(ctx, s, b, r, check, fe);
      worst_row = worse(worst_row, fe.worst_row_error);
      lse_error = fe.lse_error;
    }
    r.checked(std::move(check), passed);
    ctx.add(std::move(r));
    return {Kernel::wgmma, p, s, m.stats.median, pct_clock, worst_row, lse_error, passed};
  }

  static double worse(double a, double b) { return std::isnan(b) || b > a ? b : a; }  // NaN: unwritten

  // A backward row's check, before its figures (add_gradient_errors).
  static Json gradient_check(Pass p) {
    return {{"what",
             "each gradient's ||g - g_ref||_F / ||g_ref||_F and its worst row against the fp32 "
             "reference backward, no element left unwritten" +
                 std::string(p == Pass::fwd_bwd ? "; O and LSE as the forward's check" : "")},
            {"grad_max", kMaxRelError},
            {"grad_worst_row_max", kMaxGradientRowError}};
  }

  // Each gradient's errors, as the row's values and in its check; whether every one is within the
  // bounds. worst_row: the worst row of any of them, or of what it held before.
  static bool add_gradient_errors(Result& r, Json& check, const attention_check::BackwardErrors& e, double& worst_row) {
    bool passed = true;
    for (const auto& [grad, ge] : {std::pair{"dq", e.dq}, std::pair{"dk", e.dk}, std::pair{"dv", e.dv}}) {
      r.value(fmt::format("{}_rel_error", grad), ge.rel_error);
      r.value(fmt::format("{}_worst_row_error", grad), ge.worst_row_error);
      check[fmt::format("{}_rel_error", grad)] = ge.rel_error;
      check[fmt::format("{}_worst_row_error", grad)] = ge.worst_row_error;
      passed &= ge.rel_error < kMaxRelError && ge.worst_row_error < kMaxGradientRowError && ge.non_finite == 0;
      worst_row = worse(worst_row, ge.worst_row_error);
    }
    return passed;
  }

  // The energy line: how it was measured, the most and least TFLOP per joule, and any row without it.
  void summarise_energy(ProbeContext& ctx) const {
    std::string text = fmt::format(
        "energy per call, from NVML's energy counter between its steps over {:.1f} s of "
        "back-to-back calls a row",
        energy_s_);
    if (!energies_.empty()) {
      const auto by_efficiency = [](const RowEnergy& a, const RowEnergy& b) { return a.tflop_per_j < b.tflop_per_j; };
      const auto [least, most] = std::minmax_element(energies_.begin(), energies_.end(), by_efficiency);
      const auto by_power = [](const RowEnergy& a, const RowEnergy& b) { return a.watts < b.watts; };
      const auto [low, high] = std::minmax_element(energies_.begin(), energies_.end(), by_power);
      text += fmt::format(": {:.2f} TFLOP per joule ({}) to {:.2f} ({}); mean power {:.0f} to {:.0f} W over {} rows",
                          least->tflop_per_j, least->label, most->tflop_per_j, most->label, low->watts, high->watts,
                          energies_.size());
    }
    if (!energy_why_.empty()) text += fmt::format("; not measured for every row, first {}", energy_why_);
    ctx.finding(name(), text);
  }

  // One line per kernel and pass (`what`): its range over the shapes, the best shape, the worst errors.
  void summarise(ProbeContext& ctx, Kernel k, const std::string& what, const std::vector<Run>& runs,
                 const std::string& dtype = "bf16") const {
    std::vector<const Run*> mine;
    for (const Run& r : runs)
      if (r.kernel == k) mine.push_back(&r);
    if (mine.empty()) return;
    const auto by_rate = [](const Run* a, const Run* b) { return a->tflops < b->tflops; };
    const Run& best = **std::max_element(mine.begin(), mine.end(), by_rate);
    const Run& worst = **std::min_element(mine.begin(), mine.end(), by_rate);
    double row = 0;
    std::optional<double> lse;
    int failed = 0;
    for (const Run* r : mine) {
      row = worse(row, r->worst_row_error);
      if (r->lse_error) lse = worse(lse.value_or(0), *r->lse_error);
      failed += !r->passed;
    }
    const auto peaks = datasheet_peaks(ctx.device.name);
    ctx.finding(name(),
                fmt::format("{} {}: {:.1f}..{:.1f} TFLOP/s over {} shapes; best {} = {:.1f} TFLOP/s ({}{}); slowest "
                            "{}; largest errors: worst row relative {:.2e}{}; {} of {} failed the check",
                            kernel_name(k), what, worst.tflops, best.tflops, mine.size(), describe(best.shape),
                            best.tflops,
                            peaks ? fmt::format("{:.1f}% of the {}datasheet peak", 100 * best.tflops /
                                                (dtype == "e4m3" ? peaks->fp8 : peaks->bf16),
                                                dtype == "e4m3" ? "e4m3 " : "")
                                  : std::string("no datasheet peak for this GPU"),
                            best.pct_clock_peak ? fmt::format(", {:.1f}% of the clock peak", *best.pct_clock_peak)
                                                : std::string(),
                            describe(worst.shape), row, lse ? fmt::format(", LSE {:.2e}", *lse) : std::string(),
                            failed, mine.size()));
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(AttentionProbe);

}  // namespace tkprobe
