// The attention passes on strided tensors (attention::Strides): the (B, N, H, D) layout that
// x.view(B, N, H, D).transpose(1, 2) hands over, and rows padded as in a slice of a wider
// projection, against the same values contiguous. The results must be bit-identical: the same
// kernels load the same tiles in the same order, only from other addresses. Outputs start
// poisoned, and the elements between an output's places must stay so (nothing written outside).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/reference.hpp"
#include "src/device_buffer.hpp"

namespace check = tkprobe::attention_check;
using attention::Shape;
using attention::Strides;
using bf16 = __nv_bfloat16;
using tkprobe::DeviceBuffer;

namespace {

constexpr std::uint16_t kPoison = 0xffff;  // a NaN, as DeviceBuffer::poison() leaves it

std::uint16_t bits(bf16 x) { return __nv_bfloat16_raw(x).x; }

std::string describe(const Shape& s) {
  return "B=" + std::to_string(s.batch) + " H=" + std::to_string(s.heads) + " HKV=" + std::to_string(s.kv_heads) +
         " N=" + std::to_string(s.seq) + " D=" + std::to_string(s.head_dim) + (s.causal ? " causal" : "");
}

// How a (B, heads, N, D) tensor lies in a buffer of its own.
struct Placement {
  Strides at;
  std::size_t buffer_elements;
};

// (B, N, H, D) contiguous, each row padded by `pad` elements (0: exactly the transposed view).
Placement transposed(const Shape& s, int heads, int pad) {
  const std::int64_t d = s.head_dim, row = heads * d + pad;
  return {{s.seq * row, d, row, 1}, std::size_t(s.batch) * s.seq * row};
}

std::size_t offset(const Strides& at, int b, int h, int n, int i) {
  return std::size_t(b * at.batch + h * at.head + n * at.seq + i * at.dim);
}

template <class F>
void for_each_element(const Shape& s, int heads, F f) {
  std::size_t dense = 0;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int n = 0; n < s.seq; ++n)
        for (int i = 0; i < s.head_dim; ++i) f(dense++, b, h, n, i);
}

// A contiguous tensor's values placed at `p`, the gaps poisoned.
std::vector<bf16> scatter(const std::vector<bf16>& dense, const Shape& s, int heads, const Placement& p) {
  __nv_bfloat16_raw poison;
  poison.x = kPoison;
  std::vector<bf16> out(p.buffer_elements, bf16(poison));
  for_each_element(s, heads, [&](std::size_t k, int b, int h, int n, int i) { out[offset(p.at, b, h, n, i)] = dense[k]; });
  return out;
}

// The values at `p`, contiguous; `gaps_poisoned` says whether every other element is poison.
std::vector<bf16> gather(const std::vector<bf16>& buffer, const Shape& s, int heads, const Placement& p,
                         bool* gaps_poisoned) {
  std::vector<bf16> dense(std::size_t(s.batch) * heads * s.seq * s.head_dim);
  std::vector<bool> placed(buffer.size());
  for_each_element(s, heads, [&](std::size_t k, int b, int h, int n, int i) {
    const std::size_t at = offset(p.at, b, h, n, i);
    dense[k] = buffer[at];
    placed[at] = true;
  });
  *gaps_poisoned = true;
  for (std::size_t j = 0; j < buffer.size(); ++j) *gaps_poisoned &= placed[j] || bits(buffer[j]) == kPoison;
  return dense;
}

// The index of the first element whose bits differ, or -1.
long first_difference(const std::vector<bf16>& a, const std::vector<bf16>& b) {
  for (std::size_t j = 0; j < a.size(); ++j)
    if (bits(a[j]) != bits(b[j])) return long(j);
  return -1;
}

std::vector<bf16> random_tensor(std::size_t count, std::mt19937_64& rng) {
  DeviceBuffer<bf16> d(count);
  check::fill_normal(d.get(), count, rng(), nullptr);
  return d.download();
}

// A device copy of `host`.
struct Uploaded : DeviceBuffer<bf16> {
  explicit Uploaded(const std::vector<bf16>& host) : DeviceBuffer<bf16>(host.size()) { upload(host); }
};

// Every tensor of both passes, contiguous, and the passes' results on them.
struct Dense {
  Dense(const Shape& shape, std::mt19937_64& rng,
        attention::BackwardOptions options = {.dq = attention::DqPath::deterministic})
      : s(shape),
        options(options),
        q(random_tensor(elements(s.heads), rng)),
        k(random_tensor(elements(s.kv_heads), rng)),
        v(random_tensor(elements(s.kv_heads), rng)),
        d_o(random_tensor(elements(s.heads), rng)) {
    const Uploaded q_d(q), k_d(k), v_d(v), d_o_d(d_o);
    DeviceBuffer<bf16> o_d(q.size());
    DeviceBuffer<float> lse_d(std::size_t(s.batch) * s.heads * s.seq);
    DeviceBuffer<bf16> dq_d(q.size()), dk_d(k.size()), dv_d(k.size());
    attention::Forward({q_d.get(), k_d.get(), v_d.get(), o_d.get(), lse_d.get()}, s, attention::Kernel::wgmma)(nullptr);
    attention::Backward({q_d.get(), k_d.get(), v_d.get(), o_d.get(), d_o_d.get(), lse_d.get(), dq_d.get(), dk_d.get(),
                         dv_d.get()},
                        s, {}, options)(nullptr);
    TK_CUDA(cudaDeviceSynchronize());
    o = o_d.download();
    lse = lse_d.download();
    dq = dq_d.download();
    dk = dk_d.download();
    dv = dv_d.download();
  }
  std::size_t elements(int heads) const { return std::size_t(s.batch) * heads * s.seq * s.head_dim; }

  Shape s;
  attention::BackwardOptions options;
  std::vector<bf16> q, k, v, d_o, o, dq, dk, dv;
  std::vector<float> lse;
};

// An output gathered from its placement must equal the contiguous run's, bit for bit, and leave
// its gaps alone.
void expect_same(const char* name, const std::vector<bf16>& expected, const DeviceBuffer<bf16>& buffer,
                 const Shape& s, int heads, const Placement& p) {
  bool gaps_poisoned = false;
  const std::vector<bf16> got = gather(buffer.download(), s, heads, p, &gaps_poisoned);
  EXPECT_EQ(first_difference(got, expected), -1) << name << ": first element that differs (-1: none)";
  EXPECT_TRUE(gaps_poisoned) << name << ": written outside its places";
}

// The reducing path's dQ (DqPath::reducing): its fp32 additions come in no fixed order, so two runs
// may round a few elements differently: within 1e-2 relative (Frobenius) of the contiguous run's,
// and its gaps untouched.
void expect_near(const char* name, const std::vector<bf16>& expected, const DeviceBuffer<bf16>& buffer,
                 const Shape& s, int heads, const Placement& p) {
  bool gaps_poisoned = false;
  const std::vector<bf16> got = gather(buffer.download(), s, heads, p, &gaps_poisoned);
  double diff2 = 0, ref2 = 0;
  for (std::size_t j = 0; j < got.size(); ++j) {
    const double a = __bfloat162float(got[j]), b = __bfloat162float(expected[j]);
    diff2 += (a - b) * (a - b);
    ref2 += b * b;
  }
  EXPECT_LE(std::sqrt(diff2), 1e-2 * std::sqrt(ref2)) << name << " (NaN: an element left unwritten)";
  EXPECT_TRUE(gaps_poisoned) << name << ": written outside its places";
}

void check_layout(const Dense& x, int pad) {
  const Shape& s = x.s;
  SCOPED_TRACE(describe(s) + (pad ? " rows padded by " + std::to_string(pad) : " (B, N, H, D)"));
  const Placement pq = transposed(s, s.heads, pad), pkv = transposed(s, s.kv_heads, pad);
  const Uploaded q(scatter(x.q, s, s.heads, pq)), k(scatter(x.k, s, s.kv_heads, pkv));
  const Uploaded v(scatter(x.v, s, s.kv_heads, pkv)), d_o(scatter(x.d_o, s, s.heads, pq));
  DeviceBuffer<bf16> o(pq.buffer_elements), dq(pq.buffer_elements), dk(pkv.buffer_elements), dv(pkv.buffer_elements);
  DeviceBuffer<float> lse(x.lse.size());
  for (DeviceBuffer<bf16>* b : {&o, &dq, &dk, &dv}) b->poison();
  lse.poison();

  attention::Forward({q.get(), k.get(), v.get(), o.get(), lse.get()}, s, attention::Kernel::wgmma,
                     {pq.at, pkv.at, pkv.at, pq.at})(nullptr);
  TK_CUDA(cudaDeviceSynchronize());
  expect_same("O", x.o, o, s, s.heads, pq);
  const std::vector<float> lse_got = lse.download();
  EXPECT_EQ(std::memcmp(lse_got.data(), x.lse.data(), x.lse.size() * sizeof(float)), 0) << "LSE differs";

  // The backward reads this run's O (equal to the contiguous one when the forward passed).
  attention::Backward({q.get(), k.get(), v.get(), o.get(), d_o.get(), lse.get(), dq.get(), dk.get(), dv.get()}, s,
                      {pq.at, pkv.at, pkv.at, pq.at, pq.at, pq.at, pkv.at, pkv.at}, x.options)(nullptr);
  TK_CUDA(cudaDeviceSynchronize());
  if (x.options.dq == attention::DqPath::deterministic) {
    expect_same("dQ", x.dq, dq, s, s.heads, pq);
  } else {
    expect_near("dQ", x.dq, dq, s, s.heads, pq);
  }
  expect_same("dK", x.dk, dk, s, s.kv_heads, pkv);
  expect_same("dV", x.dv, dv, s, s.kv_heads, pkv);
}

}  // namespace

// Lengths that end mid-tile and a single row, GQA 2:1 and 4:1, batch and heads not powers of two.
TEST(AttentionStrides, TransposedAndPaddedLayoutsMatchContiguousBitForBit) {
  std::mt19937_64 rng(20261201);
  for (const Shape& s : {Shape{2, 4, 2, 1000, 64, true}, Shape{3, 6, 6, 100, 128, false},
                         Shape{1, 4, 1, 4097, 128, true}, Shape{2, 3, 1, 1, 64, false}}) {
    const Dense dense(s, rng);
    for (int pad : {0, 8, 3 * 64}) check_layout(dense, pad);
  }
}

// The reducing path (DqPath::reducing), whose conversion kernel writes dQ at
// its strides without the TMA: dK and dV bit for bit, dQ within rounding.
TEST(AttentionStrides, ReducingPathTakesTheSameLayouts) {
  std::mt19937_64 rng(20261202);
  for (const Shape& s : {Shape{2, 4, 2, 1000, 64, true}, Shape{3, 6, 6, 100, 128, false}, Shape{2, 3, 1, 1, 64, false}}) {
    const Dense dense(s, rng, {.dq = attention::DqPath::reducing});
    for (int pad : {0, 8}) check_layout(dense, pad);
  }
}
