// gemm: the DSL's bf16 GEMM (kernels/gemm) against cuBLASLt on the same inputs, in the same run.
//
// C = A B^T for square and given shapes: TFLOP/s of each (2 M N K FLOPs per launch, CUDA events),
// % of the datasheet peak, their ratio, all from the same alternating launches, and the relative error
// between the two results (the Frobenius norm of the difference over cuBLASLt's). cuBLASLt's row is a
// peer's: context, never judged by compare; the ratio is what fails when ours falls behind. cuBLASLt's own result is spot-checked against
// a host dot product in double, so a wrong layout on either side cannot pass as agreement.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <optional>

#include "kernels/gemm/gemm.hpp"
#include "probes/gemm/metrics.hpp"
#include "probes/measure/tensor_types.hpp"
#include "probes/peers/cublaslt_gemm.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::gemm;  // this probe's metrics.json

namespace tkprobe {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kDefaultSizes[] = {4096, 8192};
constexpr int kQuickSize = 2048;
constexpr double kMaxRelError = 1e-2;
constexpr double kMaxSpotError = 1e-2;  // bf16 output rounding is at most 2^-9 ~ 2e-3 relative
constexpr int kSpotChecks = 64;

// Fresh random bf16 operands (tensor::random_element: non-zero, exactly representable).
std::vector<std::uint16_t> random_bf16(std::size_t count, std::mt19937_64& rng) {
  std::vector<std::uint16_t> out(count);
  for (auto& v : out) v = static_cast<std::uint16_t>(tensor::random_element(tensor::DType::bf16, rng).bits);
  return out;
}

struct Operands {
  Operands(gemm::Shape s, std::mt19937_64& rng)
      : shape(s),
        a_host(random_bf16(std::size_t(s.m) * s.k, rng)),
        b_host(random_bf16(std::size_t(s.n) * s.k, rng)),
        a(a_host.size()),
        b(b_host.size()),
        c(std::size_t(s.m) * s.n) {
    a.upload(a_host);
    b.upload(b_host);
  }
  const bf16* a_ptr() const { return reinterpret_cast<const bf16*>(a.get()); }
  const bf16* b_ptr() const { return reinterpret_cast<const bf16*>(b.get()); }
  bf16* c_ptr() const { return reinterpret_cast<bf16*>(c.get()); }

  gemm::Shape shape;
  std::vector<std::uint16_t> a_host, b_host;
  DeviceBuffer<std::uint16_t> a, b, c;
};

class Gemm final : public Probe {
 public:
  std::string name() const override { return "gemm"; }
  std::string summary() const override {
    return "The DSL's bf16 GEMM vs cuBLASLt on the same inputs: TFLOP/s, ratio, relative error";
  }
  Requirements needs() const override { return {.sm90a = {Sm90aFeature::wgmma, Sm90aFeature::tma}}; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--m", m_, "Rows of A and C (with --n and --k; default: 4096^3 and 8192^3, --quick 2048^3)");
    cmd.add_option("--n", n_, "Rows of B, columns of C");
    cmd.add_option("--k", k_, "The reduction dimension");
    cmd.add_flag("--no-peer", no_peer_,
                 "Run the DSL's GEMM alone, checked against host dot products in double (for compute-sanitizer, "
                 "whose racecheck reports hazards inside cuBLASLt's own kernels)");
  }
  void validate() const override {
    const int given = m_.has_value() + n_.has_value() + k_.has_value();
    if (given != 0 && given != 3) throw UsageError("--m, --n, --k: give all three, or none for the standard shapes");
    if (given == 3) {
      if (const std::string why = gemm::refusal({*m_, *n_, *k_}); !why.empty()) {
        throw UsageError(fmt::format("--m {} --n {} --k {}: {}", *m_, *n_, *k_, why));
      }
    }
  }

  void run(ProbeContext& ctx) override {
    for (const gemm::Shape s : shapes(ctx.options.quick)) {
      if (no_peer_) {
        measure_alone(ctx, s);
      } else {
        measure(ctx, s);
      }
    }
  }

 private:
  std::optional<int> m_, n_, k_;
  bool no_peer_ = false;

  std::vector<gemm::Shape> shapes(bool quick) const {
    if (m_) return {{*m_, *n_, *k_}};
    if (quick) return {{kQuickSize, kQuickSize, kQuickSize}};
    std::vector<gemm::Shape> out;
    for (int size : kDefaultSizes) out.push_back({size, size, size});
    return out;
  }

  void measure(ProbeContext& ctx, gemm::Shape s) {
    Operands ops(s, ctx.rng);
    const double tflop = 2.0 * s.m * s.n * double(s.k) / 1e12;
    const auto shape = fmt::format("{}x{}x{}", s.m, s.n, s.k);
    CublasLtGemm cublas(ops.a_ptr(), ops.b_ptr(), ops.c_ptr(), s);
    gemm::Gemm ours(ops.a_ptr(), ops.b_ptr(), ops.c_ptr(), s);
    const auto run_cublas = [&](cudaStream_t stream) { cublas(stream); };
    const auto run_ours = [&](cudaStream_t stream) { ours(stream); };

    ops.c.poison();
    run_cublas(ctx.harness.stream());
    const auto expected = ops.c.download();
    const double spot = spot_error(ops, expected, ctx.rng);
    ops.c.poison();
    run_ours(ctx.harness.stream());
    const double error = tensor::relative_error_bf16(ops.c.download(), expected);

    // Every sample is one launch of each, back to back, so both see the same clock and power state,
    // which drift by more than the difference between them (cuBLASLt's own rate moved 3-4% between
    // runs at 4096^3). Each kernel's TFLOP/s comes from the same samples as the ratio.
    std::vector<double> ref_rates, tk_rates;
    const Measurement paired = ctx.harness.measure("gemm tk/cublaslt " + shape, [&] {
      const double ref_ms = ctx.harness.launch_ms(run_cublas);
      ctx.harness.flush_l2_if_asked();  // under --flush-l2 the second kernel starts cold too
      const double tk_ms = ctx.harness.launch_ms(run_ours);
      ref_rates.push_back(tflop / (ref_ms / 1e3));
      tk_rates.push_back(tflop / (tk_ms / 1e3));
      return Sample{ref_ms / tk_ms, std::nan(""), (ref_ms + tk_ms) / 1e3};
    });
    const Stats ref = timed_samples(ref_rates, paired), tk = timed_samples(tk_rates, paired);

    const double peak = datasheet_peak(ctx);
    Result r_ref = row("cublaslt", shape, ref, paired, peak);
    r_ref.peer = true;
    r_ref.value(metric::spot_error_vs_host, spot);
    r_ref.checked({{"what", "64 entries against host dot products in double (largest relative error)"},
                   {"value", spot},
                   {"max", kMaxSpotError}},
                  spot < kMaxSpotError);
    ctx.add(std::move(r_ref));
    Result r_tk = row("tk", shape, tk, paired, peak);
    r_tk.metric(metric::ratio_vs_cublaslt, paired.stats, "x", Better::higher);
    r_tk.primary = "ratio_vs_cublaslt";  // paired, so the power state cancels; TFLOP/s moves with it
    r_tk.value(metric::ratio_of_medians, tk.median / ref.median);
    r_tk.value(metric::rel_error_vs_cublaslt, error);
    r_tk.checked({{"what", "||C - C_cublaslt||_F / ||C_cublaslt||_F"}, {"value", error}, {"max", kMaxRelError}},
                 error < kMaxRelError);
    ctx.add(std::move(r_tk));
    ctx.finding(name(), fmt::format("{}: the DSL's GEMM {:.0f} TFLOP/s, cuBLASLt {:.0f} (medians of the same {} "
                                    "alternating launches): {:.3f}x (quartiles {:.3f}-{:.3f}; relative error between "
                                    "them {:.1e})",
                                    shape, tk.median, ref.median, paired.stats.n, paired.stats.median,
                                    paired.stats.q1, paired.stats.q3, error));
  }

  // --no-peer: the DSL's GEMM timed by itself; host dot products in double are its only check.
  void measure_alone(ProbeContext& ctx, gemm::Shape s) {
    Operands ops(s, ctx.rng);
    const double tflop = 2.0 * s.m * s.n * double(s.k) / 1e12;
    gemm::Gemm ours(ops.a_ptr(), ops.b_ptr(), ops.c_ptr(), s);
    ops.c.poison();
    ours(ctx.harness.stream());
    const double spot = spot_error(ops, ops.c.download(), ctx.rng);
    const auto shape = fmt::format("{}x{}x{}", s.m, s.n, s.k);
    const Measurement m =
        ctx.harness.time_kernel_rate("gemm tk " + shape, [&](cudaStream_t stream) { ours(stream); }, tflop);
    Result r = row("tk", shape, m.stats, m, datasheet_peak(ctx));
    r.params["timed"] = "alone";  // not the paired row compare holds against cuBLASLt
    r.value(metric::spot_error_vs_host, spot);
    r.checked({{"what", "64 entries against host dot products in double (largest relative error)"},
               {"value", spot},
               {"max", kMaxSpotError}},
              spot < kMaxSpotError);
    ctx.add(std::move(r));
  }

  Result row(const std::string& kernel, const std::string& shape, const Stats& tflops, const Measurement& timed,
             double peak) const {
    Result r(name(), {{"kernel", kernel}, {"shape", shape}, {"dtype", "bf16"}});
    r.metric(metric::tflops, tflops, "TFLOP/s", Better::higher);
    r.value(metric::pct_datasheet_peak, peak > 0 ? Json(100 * tflops.median / peak) : Json(nullptr));
    r.telemetry = timed.telemetry;
    return r;
  }

  static double datasheet_peak(const ProbeContext& ctx) {
    const auto peaks = datasheet_peaks(ctx.device.name);
    return peaks ? peaks->bf16 : 0;
  }

  // The largest error of kSpotChecks random entries of C against double-precision dot products
  // of A's row and B's row, relative to the larger of |dot| and sum |a b| / sqrt(K) (the size of
  // a typical entry; an entry itself may be near 0). bf16 rounding of C gives up to 2^-9 ~ 2e-3;
  // a wrong layout gives ~1.
  static double spot_error(const Operands& ops, const std::vector<std::uint16_t>& c, std::mt19937_64& rng) {
    const gemm::Shape s = ops.shape;
    double worst = 0;
    for (int i = 0; i < kSpotChecks; ++i) {
      const int row = int(rng() % s.m), col = int(rng() % s.n);
      double dot = 0, magnitude = 0;
      for (int k = 0; k < s.k; ++k) {
        const double a = tensor::bf16_value(ops.a_host[std::size_t(row) * s.k + k]);
        const double b = tensor::bf16_value(ops.b_host[std::size_t(col) * s.k + k]);
        dot += a * b;
        magnitude += std::abs(a * b);
      }
      const double typical = std::max(std::abs(dot), magnitude / std::sqrt(double(s.k)));
      worst = std::max(worst, std::abs(tensor::bf16_value(c[std::size_t(row) * s.n + col]) - dot) / typical);
    }
    return worst;
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(Gemm);

}  // namespace tkprobe
