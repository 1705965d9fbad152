// The packed-batch forward and backward (attention::VarlenForward, VarlenBackward) against the fp32
// references run on each sequence alone: O and LSE, dQ, dK and dV of every row of every sequence, on
// poisoned outputs, for batches with sequences of 0 and 1 queries or keys, lengths no multiple of a
// tile, one long sequence among short ones, more or fewer keys than queries, grouped-query heads,
// causal or not, both dQ paths, and Q, K and V read in place from one (total, 3, H, D) projection.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/reference_varlen.hpp"
#include "src/device_buffer.hpp"
#include "tests/gpu/fresh_rng.hpp"
#include "tests/gpu/kernel_bounds.hpp"

namespace check = tkprobe::attention_check;
using attention::PackedStrides;
using attention::Varlen;
using bf16 = __nv_bfloat16;
using tkprobe::DeviceBuffer;

namespace {

using kernel_bounds::attention_forward::kMaxLseError;
using kernel_bounds::attention_forward::kMaxRelError;
using kernel_bounds::attention_forward::kMaxRowError;

std::string describe(const std::vector<int>& q, const std::vector<int>& k, const Varlen& s) {
  std::ostringstream out;
  out << "H=" << s.heads << " HKV=" << s.kv_heads << " D=" << s.head_dim << (s.causal ? " causal" : "")
      << " lengths (queries/keys)";
  for (std::size_t b = 0; b < q.size(); ++b) out << " " << q[b] << "/" << k[b];
  return out.str();
}

// A packed batch on the GPU, random: Q (total_q, H, D), K and V (total_k, HKV, D) contiguous, each
// in a buffer of its own, or (`one_projection`, self-attention) all three slices of one (total, 3,
// H, D) projection.
enum class Layout { separate, one_projection };
struct Batch {
  Batch(const Varlen& shape, Layout layout, std::mt19937_64& rng)
      : s(shape),
        storage(std::max<std::size_t>(1, layout == Layout::separate ? separate_elements() : projection_elements())) {
    check::fill_normal(storage.get(), storage.size(), rng(), nullptr);
    const std::int64_t d = s.head_dim;
    if (layout == Layout::separate) {
      q_at = {s.heads * d, d};
      k_at = v_at = {s.kv_heads * d, d};
      q = storage.get();
      k = q + std::size_t(s.total_q()) * s.heads * d;
      v = k + std::size_t(s.total_k()) * s.kv_heads * d;
    } else {
      q_at = k_at = v_at = {3 * s.heads * d, d};
      q = storage.get();
      k = q + s.heads * d;
      v = k + s.heads * d;
    }
  }
  std::size_t separate_elements() const {
    return (std::size_t(s.total_q()) * s.heads + 2 * std::size_t(s.total_k()) * s.kv_heads) * s.head_dim;
  }
  std::size_t projection_elements() const { return std::size_t(s.total_q()) * 3 * s.heads * s.head_dim; }

  Varlen s;
  DeviceBuffer<bf16> storage;
  PackedStrides q_at{}, k_at{}, v_at{};
  const bf16 *q = nullptr, *k = nullptr, *v = nullptr;
};

// The forward of `in` on poisoned outputs, every sequence against the reference on it alone.
void expect_batch_matches(const Batch& in) {
  const Varlen& s = in.s;
  ASSERT_EQ(attention::refusal(attention::Tensors{in.q, in.k, in.v, nullptr, nullptr}, s,
                               {.q = in.q_at, .k = in.k_at, .v = in.v_at}),
            "");
  DeviceBuffer<bf16> o(std::max<std::size_t>(1, std::size_t(s.total_q()) * s.heads * s.head_dim));
  DeviceBuffer<float> lse(std::max<std::size_t>(1, std::size_t(s.total_q()) * s.heads));
  o.poison();
  lse.poison();
  const attention::Tensors t{in.q, in.k, in.v, o.get(), lse.get()};
  const attention::VarlenLayout layout{.q = in.q_at, .k = in.k_at, .v = in.v_at};
  const attention::VarlenForward forward(t, s, layout);
  forward(nullptr);
  const auto e = check::compare_varlen_to_reference(t, s, layout, nullptr);
  EXPECT_LT(e.rel_error, kMaxRelError);
  EXPECT_LT(e.worst_row_error, kMaxRowError);
  EXPECT_LT(e.lse_error, kMaxLseError);
}

// The backward of a contiguous batch `in`, from its forward's O and LSE and a fresh dO, on each dQ
// path, gradients poisoned, every sequence against the reference backward on it alone.
void expect_backward_matches(const Batch& in, std::mt19937_64& rng) {
  using namespace kernel_bounds::attention_backward;
  const Varlen& s = in.s;
  const auto rows = [&](int total, int heads) {
    return std::max<std::size_t>(1, std::size_t(total) * heads * s.head_dim);
  };
  DeviceBuffer<bf16> o(rows(s.total_q(), s.heads)), d_o(o.size()), dq(o.size()), dk(rows(s.total_k(), s.kv_heads)),
      dv(dk.size());
  DeviceBuffer<float> lse(std::max<std::size_t>(1, std::size_t(s.total_q()) * s.heads));
  attention::VarlenForward(attention::Tensors{in.q, in.k, in.v, o.get(), lse.get()}, s)(nullptr);
  check::fill_normal(d_o.get(), d_o.size(), rng(), nullptr);
  const attention::BackwardTensors t{in.q, in.k, in.v, o.get(), d_o.get(), lse.get(), dq.get(), dk.get(), dv.get()};
  for (attention::DqPath path : {attention::DqPath::deterministic, attention::DqPath::reducing}) {
    SCOPED_TRACE(path == attention::DqPath::reducing ? "reducing" : "deterministic");
    for (DeviceBuffer<bf16>* g : {&dq, &dk, &dv}) g->poison();
    attention::VarlenBackward(t, s, {}, {.dq = path})(nullptr);
    const check::VarlenBackwardErrors e = check::compare_varlen_backward(t, s, nullptr);
    for (const auto& [name, g] : {std::pair{"dQ", e.dq}, {"dK", e.dk}, {"dV", e.dv}}) {
      EXPECT_EQ(g.non_finite, 0u) << name << ": elements left unwritten (poison)";
      EXPECT_LE(g.rel_error, kMaxRelError) << name;
      EXPECT_LE(g.worst_row_error, kMaxRowError) << name;
    }
    EXPECT_LE(e.zero_gradient_max_abs, kMaxZeroGradient) << "dQ and dK of the sequences of one key";
  }
}

using gpu_inputs::fresh_rng;

}  // namespace

// Self-attention batches: every sequence's queries are its keys.
TEST(AttentionVarlenKernel, MatchesTheReferencePerSequence) {
  auto rng = fresh_rng();
  const std::vector<std::vector<int>> batches = {{1, 0, 300, 129, 1000, 64, 0, 4097}, {16384, 7, 1, 200}};
  for (const auto& lengths : batches)
    for (int d : {64, 96, 128, 256})
      for (bool causal : {false, true}) {
        const Varlen s{attention::offsets_of(lengths), attention::offsets_of(lengths), 8, 2, d, causal};
        SCOPED_TRACE(describe(lengths, lengths, s));
        expect_batch_matches(Batch(s, Layout::separate, rng));
      }
}

// Cross attention and chunked prefill: other key counts than queries, some sequences without keys
// (O = 0, LSE = +inf) or without queries.
TEST(AttentionVarlenKernel, MatchesTheReferenceWithOtherKeyCounts) {
  auto rng = fresh_rng();
  const std::vector<int> queries = {5, 300, 0, 1000, 1, 129, 64};
  const std::vector<int> keys = {0, 1000, 7, 300, 4097, 1, 0};
  for (int d : {64, 96, 128, 256})
    for (bool causal : {false, true}) {
      const Varlen s{attention::offsets_of(queries), attention::offsets_of(keys), 4, 4, d, causal};
      SCOPED_TRACE(describe(queries, keys, s));
      expect_batch_matches(Batch(s, Layout::separate, rng));
    }
}

TEST(AttentionVarlenKernel, ReadsQKVInPlaceFromOneProjection) {
  auto rng = fresh_rng();
  const std::vector<int> lengths = {777, 1, 2048, 63};
  for (bool causal : {false, true}) {
    const Varlen s{attention::offsets_of(lengths), attention::offsets_of(lengths), 4, 4, 128, causal};
    SCOPED_TRACE(describe(lengths, lengths, s));
    expect_batch_matches(Batch(s, Layout::one_projection, rng));
  }
}

// The backward on self-attention batches and on other key counts (sequences without queries get
// dK = dV = 0, without keys dQ = 0).
TEST(AttentionVarlenKernel, BackwardMatchesTheReferencePerSequence) {
  auto rng = fresh_rng();
  const std::vector<std::pair<std::vector<int>, std::vector<int>>> batches = {
      {{1, 0, 300, 129, 1000, 64, 0, 2049}, {1, 0, 300, 129, 1000, 64, 0, 2049}},
      {{5, 300, 0, 1000, 1, 129, 64}, {0, 1000, 7, 300, 2049, 1, 0}}};
  for (const auto& [queries, keys] : batches)
    for (int d : {64, 128})
      for (bool causal : {false, true}) {
        const Varlen s{attention::offsets_of(queries), attention::offsets_of(keys), 8, 2, d, causal};
        SCOPED_TRACE(describe(queries, keys, s));
        expect_backward_matches(Batch(s, Layout::separate, rng), rng);
      }
}
