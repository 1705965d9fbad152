// The attention backward (attention::Backward, kernels/attention/hopper/backward_*.cuh) and the
// fp32 GPU reference it is checked with (kernels/attention/reference.hpp). Inputs are fresh
// ~N(0, 1) bf16 values (queries optionally x10: large logits, near one-hot softmax rows); O and
// LSE come from the `wgmma` forward; gradients start poisoned (NaN), so an element the kernels
// never write fails every check. The GPU reference is checked against a host reference in double
// at small N, and the kernels against the GPU reference up to N = 16384.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/reference.hpp"
#include "src/device_buffer.hpp"
#include "tests/gpu/bf16_host.hpp"
#include "tests/gpu/fresh_rng.hpp"
#include "tests/gpu/kernel_bounds.hpp"

namespace check = tkprobe::attention_check;
using attention::Shape;
using bf16 = __nv_bfloat16;
using tkprobe::DeviceBuffer;

namespace {

using kernel_bounds::attention_backward::kMaxRelError;
using kernel_bounds::attention_backward::kMaxRowError;
using kernel_bounds::attention_backward::kMaxZeroGradient;  // N = 1's dQ and dK
// The fp32 reference against double: fp32 sums, and dP - D, which cancels to ~1e-3 of its terms
// in the near one-hot rows of large logits.
constexpr double kRefMaxRelError = 5e-4;

std::string describe(const Shape& s, float q_scale) {
  const std::string keys = attention::keys(s) == s.seq ? "" : " Nk=" + std::to_string(attention::keys(s));
  return "B=" + std::to_string(s.batch) + " H=" + std::to_string(s.heads) + " HKV=" + std::to_string(s.kv_heads) +
         " N=" + std::to_string(s.seq) + keys + " D=" + std::to_string(s.head_dim) + (s.causal ? " causal" : "") +
         (q_scale != 1 ? " Q x" + std::to_string(int(q_scale)) : "");
}

std::size_t elements(const Shape& s, int heads) { return std::size_t(s.batch) * heads * s.seq * s.head_dim; }
std::size_t key_elements(const Shape& s) { return std::size_t(s.batch) * s.kv_heads * attention::keys(s) * s.head_dim; }
std::size_t rows(const Shape& s) { return std::size_t(s.batch) * s.heads * s.seq; }

using bf16_host::to_bf16;
using bf16_host::to_float;

std::vector<double> to_doubles(const std::vector<bf16>& v) {
  std::vector<double> out(v.size());
  std::transform(v.begin(), v.end(), out.begin(), [](bf16 x) { return double(to_float(x)); });
  return out;
}

// Fresh random Q (times q_scale), K, V and dO; O and LSE from the wgmma forward.
struct Problem {
  Problem(const Shape& shape, float q_scale, std::mt19937_64& rng)
      : s(shape), q(elements(s, s.heads)), k(key_elements(s)), v(k.size()), o(q.size()), d_o(q.size()), lse(rows(s)) {
    for (DeviceBuffer<bf16>* b : {&q, &k, &v, &d_o}) check::fill_normal(b->get(), b->size(), rng(), nullptr);
    if (q_scale != 1) {  // x10 is exact in bf16 up to rounding once
      std::vector<bf16> h = q.download();
      for (bf16& x : h) x = to_bf16(to_float(x) * q_scale);
      q.upload(h);
    }
    const attention::Forward forward({q.get(), k.get(), v.get(), o.get(), lse.get()}, s, attention::Kernel::wgmma);
    forward(nullptr);
    TK_CUDA(cudaDeviceSynchronize());
  }

  Shape s;
  DeviceBuffer<bf16> q, k, v, o, d_o;
  DeviceBuffer<float> lse;
};

// The GPU fp32 reference's gradients.
struct GpuReference {
  explicit GpuReference(const Problem& p)
      : dq(p.q.size()), dk(p.k.size()), dv(p.k.size()), delta(rows(p.s)) {
    check::reference_backward(p.q.get(), p.k.get(), p.v.get(), p.o.get(), p.d_o.get(), p.lse.get(), dq.get(), dk.get(),
                              dv.get(), delta.get(), p.s, nullptr);
    TK_CUDA(cudaDeviceSynchronize());
  }
  DeviceBuffer<float> dq, dk, dv, delta;
};

// The kernels' gradients, on poisoned buffers, on the path `options` picks: each path named, as
// `fastest` (the default) picks by measurement.
constexpr attention::BackwardOptions kDeterministic{.dq = attention::DqPath::deterministic};
constexpr attention::BackwardOptions kReducing{.dq = attention::DqPath::reducing};

struct KernelGradients {
  explicit KernelGradients(const Problem& p, attention::BackwardOptions options = kDeterministic)
      : dq(p.q.size()), dk(p.k.size()), dv(p.k.size()) {
    for (DeviceBuffer<bf16>* b : {&dq, &dk, &dv}) b->poison();
    const attention::Backward backward({p.q.get(), p.k.get(), p.v.get(), p.o.get(), p.d_o.get(), p.lse.get(), dq.get(),
                                        dk.get(), dv.get()},
                                       p.s, {}, options);
    backward(nullptr);
    TK_CUDA(cudaDeviceSynchronize());
  }
  DeviceBuffer<bf16> dq, dk, dv;
};

// The backward in double from the same bf16 inputs and float LSE, every row.
struct HostReference {
  explicit HostReference(const Problem& p) {
    const Shape& s = p.s;
    const int d = s.head_dim, group = s.heads / s.kv_heads, nk = attention::keys(s);
    const attention::Mask mask = attention::mask_of(s);
    const auto q = to_doubles(p.q.download()), k = to_doubles(p.k.download()), v = to_doubles(p.v.download());
    const auto o = to_doubles(p.o.download()), d_o = to_doubles(p.d_o.download());
    const auto lse = p.lse.download();
    const double scale = 1 / std::sqrt(double(d));
    dq.assign(q.size(), 0);
    dk.assign(k.size(), 0);
    dv.assign(k.size(), 0);
    for (int bh = 0; bh < s.batch * s.heads; ++bh) {
      const std::size_t kv = std::size_t(bh / s.heads * s.kv_heads + bh % s.heads / group) * nk * d;
      const std::size_t qo = std::size_t(bh) * s.seq * d;
      for (int i = 0; i < s.seq; ++i) {
        const std::size_t qi = qo + std::size_t(i) * d;
        double delta = 0;
        for (int x = 0; x < d; ++x) delta += d_o[qi + x] * o[qi + x];
        for (int j = 0; j < mask.key_end(i + 1); ++j) {
          const std::size_t kj = kv + std::size_t(j) * d;
          double dot = 0, dp = 0;
          for (int x = 0; x < d; ++x) {
            dot += q[qi + x] * k[kj + x];
            dp += d_o[qi + x] * v[kj + x];
          }
          const double pr = std::exp(dot * scale - lse[std::size_t(bh) * s.seq + i]), ds = pr * (dp - delta);
          for (int x = 0; x < d; ++x) {
            dq[qi + x] += ds * k[kj + x] * scale;
            dk[kj + x] += ds * q[qi + x] * scale;
            dv[kj + x] += pr * d_o[qi + x];
          }
        }
      }
    }
  }
  std::vector<double> dq, dk, dv;
};

// ||got - want|| / ||want|| (0 when both are 0), and max |got - want|; NaN anywhere gives NaN.
struct HostErrors {
  double rel, max_abs;
};
HostErrors host_errors(const std::vector<float>& got, const std::vector<double>& want) {
  double diff2 = 0, ref2 = 0, max_abs = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = got[i] - want[i];
    diff2 += e * e;
    ref2 += want[i] * want[i];
    max_abs = std::isnan(e) || std::abs(e) > max_abs ? std::abs(e) : max_abs;
  }
  return {diff2 == 0 && ref2 == 0 ? 0 : std::sqrt(diff2 / ref2), max_abs};
}

// Shapes with batch and heads that are not powers of two: grouped-query 4:1, one key/value head,
// and one key/value head per query head.
std::vector<Shape> layouts(int seq, int d, bool causal) {
  return {{2, 8, 2, seq, d, causal}, {3, 5, 1, seq, d, causal}, {1, 3, 3, seq, d, causal}};
}

// A kernel gradient's errors within the bounds; `zero`: the gradient is exactly 0 (N = 1's dQ
// and dK), checked absolutely.
void expect_within(const tkprobe::check::RowErrors& e, const char* name, bool zero) {
  SCOPED_TRACE(name);
  EXPECT_EQ(e.non_finite, 0u) << "elements left unwritten (poison) or not finite";
  if (zero) {
    EXPECT_LE(e.max_abs_error, kMaxZeroGradient);
    return;
  }
  EXPECT_LE(e.rel_error, kMaxRelError);
  EXPECT_LE(e.worst_row_error, kMaxRowError);
}

// The largest errors over a test's cases on one dQ path, printed at its end: the margins to the bounds.
struct Worst {
  const char* path;
  double rel[3] = {}, row[3] = {};
  void take(const check::BackwardErrors& e, bool one_key) {
    const tkprobe::check::RowErrors* g[] = {&e.dq, &e.dk, &e.dv};
    for (int i = 0; i < 3; ++i) {
      if (one_key && i < 2) continue;  // exactly-zero gradients have no relative error
      rel[i] = std::max(rel[i], g[i]->rel_error);
      row[i] = std::max(row[i], g[i]->worst_row_error);
    }
  }
  ~Worst() {
    std::printf("%s path: worst relative errors (row): dQ %.2e (%.2e), dK %.2e (%.2e), dV %.2e (%.2e)\n", path, rel[0],
                row[0], rel[1], row[1], rel[2], row[2]);
  }
};

void check_kernels(const Problem& p, const GpuReference& ref, Worst& worst, attention::BackwardOptions options) {
  const KernelGradients got(p, options);
  const auto e = check::compare_backward(got.dq.get(), got.dk.get(), got.dv.get(), ref.dq.get(), ref.dk.get(),
                                         ref.dv.get(), p.s, nullptr);
  const bool one_key = attention::keys(p.s) == 1;
  expect_within(e.dq, "dQ", one_key);
  expect_within(e.dk, "dK", one_key);
  expect_within(e.dv, "dV", false);
  worst.take(e, one_key);
}

bool same_bits(const DeviceBuffer<bf16>& a, const DeviceBuffer<bf16>& b) {
  const auto x = a.download(), y = b.download();
  return std::memcmp(x.data(), y.data(), x.size() * sizeof(bf16)) == 0;
}

using gpu_inputs::fresh_rng;

}  // namespace

TEST(AttentionBackwardReference, AgreesWithTheHostInDouble) {
  auto rng = fresh_rng();
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (int n : {1, 7, 100, 130})
        for (const Shape& s : layouts(n, d, causal))
          for (float q_scale : {1.0f, 10.0f}) {
            SCOPED_TRACE(describe(s, q_scale));
            const Problem p(s, q_scale, rng);
            const GpuReference gpu(p);
            const HostReference host(p);
            const struct {
              const char* name;
              const DeviceBuffer<float>& got;
              const std::vector<double>& want;
            } grads[] = {{"dQ", gpu.dq, host.dq}, {"dK", gpu.dk, host.dk}, {"dV", gpu.dv, host.dv}};
            for (const auto& g : grads) {
              SCOPED_TRACE(g.name);
              const HostErrors e = host_errors(g.got.download(), g.want);
              EXPECT_LE(e.rel, kRefMaxRelError);
              EXPECT_LE(e.max_abs, 1e-3) << "finite, and near";
            }
          }
}

// The same with fewer or more keys than queries (the causal diagonal at the bottom-right corner;
// with fewer keys the first queries attend none, and their dQ is 0).
TEST(AttentionBackwardReference, AgreesWithTheHostInDoubleWithOtherKeyCounts) {
  auto rng = fresh_rng();
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (const auto& [nq, nk] : {std::pair{1, 130}, std::pair{130, 1}, std::pair{7, 100}, std::pair{100, 7}})
        for (Shape s : layouts(nq, d, causal)) {
          s.seq_k = nk;
          SCOPED_TRACE(describe(s, 1));
          const Problem p(s, 1, rng);
          const GpuReference gpu(p);
          const HostReference host(p);
          EXPECT_LE(host_errors(gpu.dq.download(), host.dq).rel, kRefMaxRelError) << "dQ";
          EXPECT_LE(host_errors(gpu.dk.download(), host.dk).rel, kRefMaxRelError) << "dK";
          EXPECT_LE(host_errors(gpu.dv.download(), host.dv).rel, kRefMaxRelError) << "dV";
        }
}

// compare_backward must pass the reference rounded to bf16 and fail poisoned gradients.
TEST(AttentionBackwardReference, ComparisonFailsPoisonAndPassesRounding) {
  auto rng = fresh_rng();
  const Shape s{1, 4, 2, 300, 64, true};
  const Problem p(s, 1, rng);
  const GpuReference ref(p);
  const auto rounded = [](const DeviceBuffer<float>& f) {
    std::vector<bf16> out;
    for (float x : f.download()) out.push_back(to_bf16(x));
    return out;
  };
  DeviceBuffer<bf16> dq(ref.dq.size()), dk(ref.dk.size()), dv(ref.dv.size());
  dq.upload(rounded(ref.dq));
  dk.upload(rounded(ref.dk));
  dv.upload(rounded(ref.dv));
  const auto exact = check::compare_backward(dq.get(), dk.get(), dv.get(), ref.dq.get(), ref.dk.get(), ref.dv.get(), s, nullptr);
  for (const tkprobe::check::RowErrors* e : {&exact.dq, &exact.dk, &exact.dv}) {
    EXPECT_GT(e->rel_error, 0) << "bf16 rounding shows";
    EXPECT_LT(e->rel_error, 2e-3) << "bf16 rounds to within 2^-9 relative";
    EXPECT_LT(e->worst_row_error, 2e-3 / tkprobe::check::kRowFloor);
    EXPECT_EQ(e->non_finite, 0u);
  }

  // One row of dV holding its neighbour's values: the worst row shows it whatever the norm.
  std::vector<bf16> one_wrong = rounded(ref.dv);
  std::copy_n(one_wrong.begin() + 8 * s.head_dim, s.head_dim, one_wrong.begin() + 7 * s.head_dim);
  dv.upload(one_wrong);
  const auto wrong_row = check::compare_backward(dq.get(), dk.get(), dv.get(), ref.dq.get(), ref.dk.get(), ref.dv.get(), s, nullptr);
  EXPECT_GT(wrong_row.dv.worst_row_error, 0.5);
  dv.upload(rounded(ref.dv));

  TK_CUDA(cudaMemset(dk.get() + 7 * s.head_dim + 3, 0xff, 2));  // one element of row 7: NaN
  const auto poisoned = check::compare_backward(dq.get(), dk.get(), dv.get(), ref.dq.get(), ref.dk.get(), ref.dv.get(), s, nullptr);
  EXPECT_TRUE(std::isnan(poisoned.dk.rel_error));
  EXPECT_TRUE(std::isnan(poisoned.dk.worst_row_error));
  EXPECT_TRUE(std::isnan(poisoned.dk.max_abs_error));
  EXPECT_EQ(poisoned.dk.non_finite, 1u);
  EXPECT_EQ(poisoned.dq.rel_error, exact.dq.rel_error) << "the other gradients untouched";
}

// Both dQ paths on every shape, against one reference each (the default takes the reducing path,
// attention::dq_path; the deterministic one is a request away).
void check_both_paths(const Shape& s, float q_scale, std::mt19937_64& rng, Worst (&worst)[2]) {
  const Problem p(s, q_scale, rng);
  const GpuReference ref(p);
  const attention::BackwardOptions paths[2] = {kDeterministic, kReducing};
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(describe(s, q_scale) + " " + worst[i].path);
    check_kernels(p, ref, worst[i], paths[i]);
  }
}

TEST(AttentionBackwardKernels, MatchTheGpuReference) {
  auto rng = fresh_rng();
  Worst worst[2] = {{"deterministic"}, {"reducing"}};
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (int n : {1, 7, 63, 100, 1000, 4097})
        for (const Shape& s : layouts(n, d, causal))
          for (float q_scale : {1.0f, 10.0f}) check_both_paths(s, q_scale, rng, worst);
}

TEST(AttentionBackwardKernels, MatchTheGpuReferenceAtSixteenThousandKeys) {
  auto rng = fresh_rng();
  Worst worst[2] = {{"deterministic"}, {"reducing"}};
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (const Shape& s : {Shape{1, 4, 1, 16384, d, causal}, Shape{1, 3, 3, 16384, d, causal}})
        for (float q_scale : {1.0f, 10.0f}) check_both_paths(s, q_scale, rng, worst);
}

// Fewer or more keys than queries, both dQ paths: one query against many keys, one key against
// many queries, lengths that are no multiple of a tile, and 1000 against 16384 both ways.
TEST(AttentionBackwardKernels, MatchTheGpuReferenceWithOtherKeyCounts) {
  auto rng = fresh_rng();
  Worst worst[2] = {{"deterministic"}, {"reducing"}};
  const std::pair<int, int> lengths[] = {{1, 4097},  {4097, 1},     {100, 1000},  {1000, 100},
                                         {129, 200}, {1000, 16384}, {16384, 1000}};
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (const auto& [nq, nk] : lengths)
        for (float q_scale : {1.0f, 10.0f}) {
          Shape s{2, 8, 2, nq, d, causal, nk};
          if (nq * nk > 4'000'000) s = {1, 4, 1, nq, d, causal, nk};  // the long ones once, smaller
          check_both_paths(s, q_scale, rng, worst);
        }
}

// No atomics (the deterministic path): two runs give the same bits.
TEST(AttentionBackwardKernels, AreDeterministic) {
  auto rng = fresh_rng();
  for (bool causal : {false, true}) {
    const Shape s{2, 8, 2, 4097, 128, causal};
    SCOPED_TRACE(describe(s, 1));
    const Problem p(s, 1, rng);
    const KernelGradients a(p), b(p);
    EXPECT_TRUE(same_bits(a.dq, b.dq));
    EXPECT_TRUE(same_bits(a.dk, b.dk));
    EXPECT_TRUE(same_bits(a.dv, b.dv));
  }
}

// The reducing path twice on the same inputs: dK and dV are summed in registers in a fixed order
// (the same bits); dQ's additions into the accumulator come in whatever order the key blocks
// reach them, so its bits may differ: reported, not asserted.
TEST(AttentionBackwardKernels, ReducingDqRunTwice) {
  auto rng = fresh_rng();
  for (bool causal : {false, true}) {
    const Shape s{2, 8, 2, 4097, 128, causal};
    SCOPED_TRACE(describe(s, 1));
    const Problem p(s, 1, rng);
    const KernelGradients a(p, kReducing), b(p, kReducing);
    EXPECT_TRUE(same_bits(a.dk, b.dk));
    EXPECT_TRUE(same_bits(a.dv, b.dv));
    const auto x = a.dq.download(), y = b.dq.download();
    std::size_t differ = 0;
    double max_diff = 0, max_abs = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float u = to_float(x[i]), v = to_float(y[i]);
      differ += std::memcmp(&x[i], &y[i], sizeof(bf16)) != 0;
      max_diff = std::max(max_diff, double(std::abs(u - v)));
      max_abs = std::max(max_abs, double(std::abs(u)));
    }
    std::printf("%s: dQ of two reducing runs: %zu of %zu elements differ in their bits, max |difference| %.3e "
                "(max |dQ| %.3e)\n",
                describe(s, 1).c_str(), differ, x.size(), max_diff, max_abs);
  }
}
