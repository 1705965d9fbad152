// The attention kernels (kernels/attention) and the tools the probe checks them with
// (kernels/attention/reference.hpp) on the GPU. Inputs are fresh ~N(0, 1) bf16 values; outputs
// start poisoned (NaN), so a row a kernel never writes fails every check. Short sequences are
// checked against a host reference in double, N = 16384 against the GPU fp32 reference, which
// is itself checked against the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <tuple>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/reference.hpp"
#include "kernels/attention/reference_fp8.hpp"
#include "src/device_buffer.hpp"
#include "tests/gpu/bf16_host.hpp"
#include "tests/gpu/fresh_rng.hpp"
#include "tests/gpu/kernel_bounds.hpp"

namespace check = tkprobe::attention_check;
using attention::Kernel;
using attention::Shape;
using bf16 = __nv_bfloat16;
using tkprobe::DeviceBuffer;

namespace {

using kernel_bounds::attention_forward::kMaxLseError;
using kernel_bounds::attention_forward::kMaxRelError;
using kernel_bounds::attention_forward::kMaxRowError;
// The fp32 reference against double: rounding of fp32 sums over at most ~16k terms.
constexpr double kRefMaxRelError = 1e-4, kRefMaxLseError = 1e-4;
// Sequences up to this long are checked row by row in full on the host; longer ones on a sample of
// rows (the first and last tiles and random ones), and everywhere for NaN.
constexpr int kFullHostRows = 1000;

const Kernel kKernels[] = {Kernel::wgmma, Kernel::mma_sync};
const char* name(Kernel k) { return k == Kernel::wgmma ? "wgmma" : "mma-sync"; }
// The kernels that take s: both, or at head dims 96 and 256 the wgmma forward alone.
std::vector<Kernel> kernels_for(const Shape& s) {
  if (s.head_dim == 96 || s.head_dim == 256) return {Kernel::wgmma};
  return {std::begin(kKernels), std::end(kKernels)};
}

std::string describe(const Shape& s) {
  const std::string keys = attention::keys(s) == s.seq ? "" : " Nk=" + std::to_string(attention::keys(s));
  return "B=" + std::to_string(s.batch) + " H=" + std::to_string(s.heads) + " HKV=" + std::to_string(s.kv_heads) +
         " N=" + std::to_string(s.seq) + keys + " D=" + std::to_string(s.head_dim) + (s.causal ? " causal" : "");
}

std::size_t rows(const Shape& s, int heads) { return std::size_t(s.batch) * heads * s.seq; }
std::size_t key_rows(const Shape& s) { return std::size_t(s.batch) * s.kv_heads * attention::keys(s); }

using bf16_host::to_bf16;
using bf16_host::to_float;
using bf16_host::to_floats;

// Fresh random Q, K, V on the GPU, and their values on the host.
struct Inputs {
  Inputs(const Shape& shape, std::mt19937_64& rng)
      : s(shape), q(rows(s, s.heads) * s.head_dim), k(key_rows(s) * s.head_dim), v(k.size()) {
    for (DeviceBuffer<bf16>* b : {&q, &k, &v}) check::fill_normal(b->get(), b->size(), rng(), nullptr);
    TK_CUDA(cudaDeviceSynchronize());
  }
  std::vector<float> host(const DeviceBuffer<bf16>& b) const { return to_floats(b.download()); }

  Shape s;
  DeviceBuffer<bf16> q, k, v;
};

// The query rows the host checks in every (batch, head).
std::vector<int> host_rows(int n, std::mt19937_64& rng) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) {
    const bool edge = i < 64 || i >= n - 130;  // the first tile, and the last tiles of any size up to 128
    if (n <= kFullHostRows || edge || rng() % (n / 64) == 0) out.push_back(i);
  }
  return out;
}

// The forward pass in double for the chosen rows: O[(bh, row)][d] and LSE[(bh, row)], bh-major.
// A row that attends no key (attention::Mask) has O = 0 and LSE = +inf.
struct HostReference {
  HostReference(const Inputs& in, std::vector<int> chosen) : rows(std::move(chosen)) {
    const Shape& s = in.s;
    const int d = s.head_dim, nk = attention::keys(s);
    const attention::Mask mask = attention::mask_of(s);
    const auto q = in.host(in.q), k = in.host(in.k), v = in.host(in.v);
    const double scale = 1 / std::sqrt(double(d));
    std::vector<double> p(nk);
    for (int bh = 0; bh < s.batch * s.heads; ++bh) {
      const int batch = bh / s.heads, kv_head = bh % s.heads / (s.heads / s.kv_heads);
      const float* qs = &q[std::size_t(bh) * s.seq * d];
      const float* ks = &k[(std::size_t(batch) * s.kv_heads + kv_head) * nk * d];
      const float* vs = &v[(std::size_t(batch) * s.kv_heads + kv_head) * nk * d];
      for (int i : rows) {
        const int keys = mask.key_end(i + 1);  // the keys row i attends: 0 .. keys - 1
        if (keys == 0) {
          o.insert(o.end(), d, 0.0);
          lse.push_back(INFINITY);
          continue;
        }
        double top = -INFINITY;
        for (int j = 0; j < keys; ++j) {
          double dot = 0;
          for (int x = 0; x < d; ++x) dot += double(qs[std::size_t(i) * d + x]) * ks[std::size_t(j) * d + x];
          p[j] = dot * scale;
          top = std::max(top, p[j]);
        }
        double sum = 0;
        for (int j = 0; j < keys; ++j) sum += p[j] = std::exp(p[j] - top);
        std::vector<double> row(d, 0.0);
        for (int j = 0; j < keys; ++j)
          for (int x = 0; x < d; ++x) row[x] += p[j] * vs[std::size_t(j) * d + x];
        for (int x = 0; x < d; ++x) o.push_back(row[x] / sum);
        lse.push_back(top + std::log(sum));
      }
    }
  }

  struct Errors {
    double rel, worst_row, lse;
  };
  // `got_o` [B][H][N][D] and `got_lse` [B][H][N] on the chosen rows. NaN anywhere gives NaN; a
  // row without keys counts as infinitely wrong unless its O is exactly 0 and its LSE +inf.
  Errors errors(const Shape& s, const std::vector<float>& got_o, const std::vector<float>& got_lse) const {
    double diff2 = 0, ref2 = 0, worst_row = 0, lse_error = 0;
    const auto worse = [](double a, double b) { return std::isnan(b) || b > a ? b : a; };
    std::size_t at = 0;
    for (int bh = 0; bh < s.batch * s.heads; ++bh)
      for (std::size_t r = 0; r < rows.size(); ++r, ++at) {
        const std::size_t row = std::size_t(bh) * s.seq + rows[r];
        if (std::isinf(lse[at])) {
          const float* got = &got_o[row * s.head_dim];
          const bool zero = std::all_of(got, got + s.head_dim, [](float x) { return x == 0; });
          const double wrong = zero && got_lse[row] == INFINITY ? 0 : INFINITY;
          worst_row = worse(worst_row, wrong);
          lse_error = worse(lse_error, wrong);
          continue;
        }
        double row_diff2 = 0, row_ref2 = 0;
        for (int x = 0; x < s.head_dim; ++x) {
          const double want = o[at * s.head_dim + x], d = got_o[row * s.head_dim + x] - want;
          row_diff2 += d * d;
          row_ref2 += want * want;
        }
        diff2 += row_diff2;
        ref2 += row_ref2;
        worst_row = worse(worst_row, std::sqrt(row_diff2 / row_ref2));
        lse_error = worse(lse_error, std::abs(got_lse[row] - lse[at]));
      }
    return {std::sqrt(diff2 / ref2), worst_row, lse_error};
  }

  std::vector<int> rows;
  std::vector<double> o, lse;
};

int non_finite(const std::vector<float>& v) {
  return int(std::count_if(v.begin(), v.end(), [](float x) { return !std::isfinite(x); }));
}
int nans(const std::vector<float>& v) {
  return int(std::count_if(v.begin(), v.end(), [](float x) { return std::isnan(x); }));
}

// One kernel's output on poisoned buffers.
struct Output {
  std::vector<float> o, lse;
};

Output run_kernel(Kernel k, Inputs& in) {
  DeviceBuffer<bf16> o(in.q.size());
  DeviceBuffer<float> lse(rows(in.s, in.s.heads));
  o.poison();
  lse.poison();
  const attention::Forward forward({in.q.get(), in.k.get(), in.v.get(), o.get(), lse.get()}, in.s, k);
  forward(nullptr);
  TK_CUDA(cudaDeviceSynchronize());
  return {to_floats(o.download()), lse.download()};
}

// The GPU fp32 reference's O and LSE.
struct GpuReference {
  explicit GpuReference(const Inputs& in) : o(in.q.size()), lse(rows(in.s, in.s.heads)) {
    check::reference_forward(in.q.get(), in.k.get(), in.v.get(), o.get(), lse.get(), in.s, nullptr);
    TK_CUDA(cudaDeviceSynchronize());
  }
  DeviceBuffer<float> o, lse;
};

using gpu_inputs::fresh_rng;

// Both kernels on fresh inputs of shape s, outputs poisoned, against the GPU fp32 reference.
void expect_kernels_match_the_gpu_reference(const Shape& s, std::mt19937_64& rng) {
  SCOPED_TRACE(describe(s));
  Inputs in(s, rng);
  const GpuReference ref(in);
  DeviceBuffer<bf16> o(in.q.size());
  DeviceBuffer<float> lse(rows(s, s.heads));
  for (Kernel k : kernels_for(s)) {
    SCOPED_TRACE(name(k));
    if (const std::string why = attention::refusal(s, k); !why.empty()) {
      ADD_FAILURE() << "refused: " << why;
      continue;
    }
    o.poison();
    lse.poison();
    const attention::Forward forward({in.q.get(), in.k.get(), in.v.get(), o.get(), lse.get()}, s, k);
    forward(nullptr);
    const auto e = check::compare_to_reference(o.get(), lse.get(), ref.o.get(), ref.lse.get(), s, nullptr);
    EXPECT_LT(e.rel_error, kMaxRelError);
    EXPECT_LT(e.worst_row_error, kMaxRowError);
    EXPECT_LT(e.lse_error, kMaxLseError);
  }
}

// Both kernels on fresh inputs of shape s against the host reference. LSE may be +inf (a row
// without keys), which the reference's errors judge; NaN is poison left unwritten.
void expect_kernels_match_the_host(const Shape& s, std::mt19937_64& rng) {
  SCOPED_TRACE(describe(s));
  Inputs in(s, rng);
  const HostReference host(in, host_rows(s.seq, rng));
  for (Kernel k : kernels_for(s)) {
    SCOPED_TRACE(name(k));
    if (const std::string why = attention::refusal(s, k); !why.empty()) {
      ADD_FAILURE() << "refused: " << why;
      continue;
    }
    const Output out = run_kernel(k, in);
    EXPECT_EQ(non_finite(out.o), 0) << "O elements left unwritten (poison) or not finite";
    EXPECT_EQ(nans(out.lse), 0) << "LSE rows left unwritten (poison)";
    const auto e = host.errors(s, out.o, out.lse);
    EXPECT_LT(e.rel, kMaxRelError);
    EXPECT_LT(e.worst_row, kMaxRowError);
    EXPECT_LT(e.lse, kMaxLseError);
  }
}

}  // namespace

TEST(AttentionInputs, FillNormalIsStandardNormalNeverZeroAndSeeded) {
  constexpr std::size_t kCount = 1 << 20;
  DeviceBuffer<bf16> a(kCount), b(kCount), c(kCount);
  check::fill_normal(a.get(), kCount, 7, nullptr);
  check::fill_normal(b.get(), kCount, 7, nullptr);
  check::fill_normal(c.get(), kCount, 8, nullptr);
  const auto x = to_floats(a.download()), same = to_floats(b.download()), other = to_floats(c.download());
  double sum = 0, sum2 = 0;
  int zeros = 0, tails = 0, equal = 0;
  for (std::size_t i = 0; i < kCount; ++i) {
    sum += x[i];
    sum2 += double(x[i]) * x[i];
    zeros += x[i] == 0;
    tails += std::abs(x[i]) > 2;
    equal += x[i] == other[i];
  }
  const double mean = sum / kCount, var = sum2 / kCount - mean * mean;
  EXPECT_NEAR(mean, 0, 0.01);
  EXPECT_NEAR(var, 1, 0.02);
  EXPECT_NEAR(double(tails) / kCount, 0.0455, 0.003) << "P(|z| > 2) of a standard normal";
  EXPECT_EQ(zeros, 0);
  EXPECT_EQ(x, same) << "one seed, one sequence";
  EXPECT_LT(equal, int(kCount / 100)) << "another seed, other values";
}

TEST(AttentionReference, AgreesWithTheHostInDouble) {
  auto rng = fresh_rng();
  const std::vector<Shape> shapes = {
      {2, 4, 2, 1, 64, false},      {2, 4, 2, 100, 64, true},       {1, 4, 1, 1000, 64, false},
      {2, 4, 4, 100, 128, false},   {1, 4, 1, 1000, 128, true},     {1, 2, 1, 4097, 128, true},
      {1, 2, 2, 4097, 64, false},   {2, 4, 2, 100, 64, true, 1000}, {2, 4, 2, 1000, 128, true, 100},
      {1, 2, 1, 1, 64, true, 4097}, {1, 2, 2, 4097, 128, true, 1}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(describe(s));
    Inputs in(s, rng);
    const GpuReference gpu(in);
    const HostReference host(in, host_rows(s.seq, rng));
    const auto e = host.errors(s, gpu.o.download(), gpu.lse.download());
    EXPECT_LT(e.rel, kRefMaxRelError);
    EXPECT_LT(e.lse, kRefMaxLseError);
  }
}

// compare_to_reference must pass the reference rounded to bf16 and fail poisoned outputs.
TEST(AttentionReference, ComparisonFailsPoisonAndPassesRounding) {
  auto rng = fresh_rng();
  const Shape s{1, 2, 1, 300, 64, true};
  Inputs in(s, rng);
  const GpuReference ref(in);
  std::vector<bf16> rounded;
  for (float x : ref.o.download()) rounded.push_back(to_bf16(x));
  DeviceBuffer<bf16> o(rounded.size());
  o.upload(rounded);
  DeviceBuffer<float> lse(ref.lse.size());
  lse.upload(ref.lse.download());

  const auto exact = check::compare_to_reference(o.get(), lse.get(), ref.o.get(), ref.lse.get(), s, nullptr);
  EXPECT_GT(exact.rel_error, 0) << "bf16 rounding shows";
  EXPECT_LT(exact.rel_error, 2e-3) << "bf16 rounds to within 2^-9 relative";
  EXPECT_GE(exact.worst_row_error, exact.rel_error);
  EXPECT_LT(exact.worst_row_error, 4e-3) << "no row of it much worse";
  EXPECT_EQ(exact.lse_error, 0);

  // One row holding its neighbour's values: the worst row shows it whatever the norm over all rows.
  std::vector<bf16> one_wrong = rounded;
  std::copy_n(rounded.begin() + 8 * s.head_dim, s.head_dim, one_wrong.begin() + 7 * s.head_dim);
  o.upload(one_wrong);
  const auto wrong_row = check::compare_to_reference(o.get(), lse.get(), ref.o.get(), ref.lse.get(), s, nullptr);
  EXPECT_GT(wrong_row.worst_row_error, 0.5);
  o.upload(rounded);

  TK_CUDA(cudaMemset(o.get() + 5 * s.head_dim, 0xff, 2));  // one element of row 5: NaN
  TK_CUDA(cudaMemset(lse.get() + 299, 0xff, 4));
  const auto poisoned = check::compare_to_reference(o.get(), lse.get(), ref.o.get(), ref.lse.get(), s, nullptr);
  EXPECT_TRUE(std::isnan(poisoned.rel_error));
  EXPECT_TRUE(std::isnan(poisoned.worst_row_error));
  EXPECT_TRUE(std::isnan(poisoned.lse_error));
}

TEST(AttentionKernels, MatchTheHostReference) {
  auto rng = fresh_rng();
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (int kv_heads : {4, 2, 1})
        for (int n : {1, 100, 1000, 4097}) {
          expect_kernels_match_the_host({n <= 100 ? 2 : 1, 4, kv_heads, n, d, causal}, rng);
        }
}

// Fewer or more keys than queries (attention::Mask: the causal diagonal at the bottom-right
// corner; with fewer keys the first rows attend none, O = 0 and LSE = +inf): one query against
// many keys (decoding), one key against many queries, and lengths that are no multiple of a tile.
TEST(AttentionKernels, MatchTheHostReferenceWithOtherKeyCounts) {
  auto rng = fresh_rng();
  const std::pair<int, int> lengths[] = {{1, 4097}, {4097, 1}, {100, 1000}, {1000, 100}, {300, 4097}, {129, 200}};
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (int kv_heads : {4, 1})
        for (const auto& [nq, nk] : lengths) {
          expect_kernels_match_the_host({2, 4, kv_heads, nq, d, causal, nk}, rng);
        }
}

// The GPU reference against the kernels where the host's would be slow: 1000 queries against
// 16384 keys (chunked prefill) and the reverse.
TEST(AttentionKernels, MatchTheGpuReferenceWithOtherKeyCounts) {
  auto rng = fresh_rng();
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (const auto& [nq, nk] : {std::pair{1000, 16384}, std::pair{16384, 1000}})
        expect_kernels_match_the_gpu_reference({1, 4, 2, nq, d, causal, nk}, rng);
}

// Long sequences, against the GPU reference: N = 16384, and 8193 at D = 128 without a mask, whose
// last key tile holds one key.
TEST(AttentionKernels, MatchTheGpuReferenceAtSixteenThousandKeys) {
  auto rng = fresh_rng();
  std::vector<Shape> shapes{{1, 4, 1, 8193, 128, false}};
  for (int d : {64, 128})
    for (bool causal : {false, true}) shapes.push_back({2, 4, 2, 16384, d, causal});
  for (const Shape& s : shapes) expect_kernels_match_the_gpu_reference(s, rng);
}

// Head dims 96 (three 64-byte swizzled boxes a row) and 256 (64-key tiles, one Q slot that O leaves
// through), the wgmma forward's alone: lengths around the tiles, fewer and more keys than queries,
// grouped-query heads, and N = 16384.
TEST(AttentionKernels, HeadDims96And256MatchTheReferences) {
  auto rng = fresh_rng();
  for (int d : {96, 256})
    for (bool causal : {false, true}) {
      for (int n : {1, 100, 1000, 4097}) expect_kernels_match_the_host({n <= 100 ? 2 : 1, 4, 2, n, d, causal}, rng);
      for (const auto& [nq, nk] : {std::pair{100, 1000}, std::pair{1000, 100}, std::pair{1, 4097}})
        expect_kernels_match_the_host({2, 4, 1, nq, d, causal, nk}, rng);
      expect_kernels_match_the_gpu_reference({1, 2048 / d, 2048 / d, 16384, d, causal}, rng);
    }
}

// The e4m3 forward (attention::Fp8Forward, D = 128) against the fp32 reference on the dequantized
// inputs, within the bounds P's e4m3 rounding implies (kernels/attention/reference_fp8.hpp: 4e-2 over
// the tensor, 1e-1 for the worst row; LSE as bf16's). N = 1 (one key: P = 1, exact), 63 (one
// partial tile), 1024 and 4096, causal and not, and grouped-query heads once. Quantization
// itself is checked too: power-of-two scales, x replaced by exactly what the kernel reads.
TEST(AttentionE4m3, MatchesTheReferenceOnTheDequantizedInputs) {
  auto rng = fresh_rng();
  std::vector<Shape> shapes;
  for (int n : {1, 63, 1024, 4096})
    for (bool causal : {false, true}) shapes.push_back({2, 4, 4, n, 128, causal});
  shapes.push_back({1, 8, 2, 1000, 128, true});  // GQA 4:1
  for (const Shape& s : shapes) {
    SCOPED_TRACE(describe(s));
    ASSERT_EQ(attention::refusal(s, attention::Dtype::e4m3), "");
    Inputs in(s, rng);
    DeviceBuffer<__nv_fp8_e4m3> q8(in.q.size()), k8(in.k.size()), v8(in.v.size());
    const float q_scale = check::quantize_e4m3(in.q.get(), q8.get(), in.q.size(), nullptr);
    const float k_scale = check::quantize_e4m3(in.k.get(), k8.get(), in.k.size(), nullptr);
    const float v_scale = check::quantize_e4m3(in.v.get(), v8.get(), in.v.size(), nullptr);
    for (float scale : {q_scale, k_scale, v_scale}) {
      EXPECT_EQ(std::exp2(std::round(std::log2(scale))), scale) << "a power of two";
      EXPECT_GT(scale, 0.0f);
    }
    {  // x now holds e4m3(x / scale) x scale exactly, and nothing saturated
      const auto x = in.host(in.q);
      const auto x8 = q8.download();
      for (std::size_t i = 0; i < x.size(); i += 997) {
        EXPECT_EQ(x[i], float(x8[i]) * q_scale) << i;
        EXPECT_LT(std::fabs(float(x8[i])), 448.0f) << i;
      }
    }
    const GpuReference ref(in);
    DeviceBuffer<bf16> o(in.q.size());
    DeviceBuffer<float> lse(rows(s, s.heads));
    o.poison();
    lse.poison();
    const attention::Fp8Forward forward({q8.get(), k8.get(), v8.get(), q_scale, k_scale, v_scale, o.get(), lse.get()}, s);
    forward(nullptr);
    forward(nullptr);  // twice: the second launch overwrites the same V^T and O
    TK_CUDA(cudaDeviceSynchronize());
    const auto e = check::compare_to_reference(o.get(), lse.get(), ref.o.get(), ref.lse.get(), s, nullptr);
    EXPECT_LT(e.rel_error, check::kE4m3MaxRelError);
    EXPECT_LT(e.worst_row_error, check::kE4m3MaxRowError);
    EXPECT_LT(e.lse_error, kMaxLseError);
    if (s.seq == 1) {
      EXPECT_LT(e.rel_error, 1e-2) << "one key: P = 1 is exact in e4m3, O = V's row in bf16";
    }
    std::printf("[ e4m3 ] %s: rel %.3e, worst row %.3e, LSE %.3e\n", describe(s).c_str(), e.rel_error,
                e.worst_row_error, e.lse_error);
  }
}
