// A packed batch's backward (kernels/attention/varlen_backward.hpp): each sequence's items are the
// dense schedule's on it alone, longest sequence first; every query row has one scratch row, inside
// its sequence's padded rows, which the preprocess and the conversion find again; every tile an
// item reads or reduces into lies inside its sequence's rows; sequences without queries or keys
// get the zeros their gradients are; bad tensors are refused before any launch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/varlen_backward.hpp"

namespace bw = attention::backward;
using attention::Varlen;

namespace {

Varlen packed(const std::vector<int>& queries, const std::vector<int>& keys, bool causal, int head_dim = 128) {
  return {attention::offsets_of(queries), attention::offsets_of(keys), 4, 2, head_dim, causal};
}

// Lengths a batch may hold: 0, 1, no multiple of any tile, a multiple, one long.
std::vector<int> random_lengths(std::mt19937& rng, int count) {
  std::uniform_int_distribution<int> pick(0, 5), short_length(2, 700);
  std::vector<int> out;
  for (int i = 0; i < count; ++i) {
    const int kind = pick(rng);
    out.push_back(kind == 0 ? 0 : kind == 1 ? 1 : kind == 2 ? 2049 : kind == 3 ? 256 : short_length(rng));
  }
  return out;
}

std::vector<Varlen> batches() {
  std::mt19937 rng(11);
  std::vector<Varlen> out;
  for (int trial = 0; trial < 8; ++trial) {
    const std::vector<int> queries = random_lengths(rng, 7);
    const std::vector<int> keys = trial % 2 == 0 ? queries : random_lengths(rng, 7);  // cross attention too
    for (bool causal : {false, true}) out.push_back(packed(queries, keys, causal, trial % 4 < 2 ? 128 : 64));
  }
  return out;
}

std::string describe(const Varlen& s) {
  std::string out = s.causal ? "causal" : "full";
  for (int b = 0; b < s.batch(); ++b) out += " " + std::to_string(s.queries(b)) + "x" + std::to_string(s.keys(b));
  return out + " D" + std::to_string(s.head_dim);
}

bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

// Each query row of each head has a scratch row inside its sequence's padded rows; packed_query_row
// finds that row's packed row there, and calls every other row pad.
TEST(AttentionVarlenBackward, EveryQueryRowHasOneScratchRowFoundAgain) {
  for (const Varlen& s : batches()) {
    SCOPED_TRACE(describe(s));
    const std::vector<int> first = bw::padded_offsets(s);
    const std::vector<bw::RowBlock> blocks = bw::row_blocks(s);
    const int padded_rows = first.back();
    ASSERT_EQ(padded_rows, int(blocks.size()) * bw::kRowPad);
    std::map<std::pair<int, int>, int> found;  // (head, packed row) -> scratch rows holding it
    for (std::size_t g = 0; g < std::size_t(s.heads) * padded_rows; ++g) {
      const bw::QueryRow q = bw::packed_query_row(blocks.data(), padded_rows, g);
      ASSERT_EQ(q.matrix, int(g / padded_rows));
      if (q.real()) ++found[{q.matrix, q.row}];
    }
    for (int b = 0; b < s.batch(); ++b) {
      EXPECT_EQ(first[b] % bw::kRowPad, 0);
      EXPECT_EQ(first[b + 1] - first[b], bw::padded(s.queries(b)));
      for (int h = 0; h < s.heads; ++h)
        for (int r = 0; r < s.queries(b); ++r) {
          const std::size_t g = std::size_t(h) * padded_rows + first[b] + r;
          const bw::QueryRow q = bw::packed_query_row(blocks.data(), padded_rows, g);
          ASSERT_TRUE(q.real() && q.row == s.cu_seqlens_q[b] + r) << "sequence " << b << " row " << r;
          ASSERT_EQ(q.queries_left, std::min(bw::kRowPad - r % bw::kRowPad, s.queries(b) - r))
              << "the queries from it on in its block (the conversion's row + 8)";
        }
    }
    EXPECT_EQ(int(found.size()), s.heads * s.total_q());
    for (const auto& [row, count] : found) ASSERT_EQ(count, 1) << "head " << row.first << " row " << row.second;
  }
}

// The dK/dV items: per sequence with queries and keys, exactly the dense schedule's items of that
// sequence alone; each query tile read, and each dQ part reduced into, inside its sequence's rows.
TEST(AttentionVarlenBackward, KeyItemsAreEachSequencesDenseItems) {
  for (const Varlen& s : batches())
    for (bool staggered : {false, true}) {
      SCOPED_TRACE(describe(s) + (staggered ? " staggered" : ""));
      const int step = bw::kv_step_queries(s.head_dim);
      const std::vector<int> first = bw::padded_offsets(s);
      std::map<int, std::vector<bw::KvItem>> by_sequence;
      for (const bw::VarlenKvItem& it : bw::varlen_kv_items(s, step, staggered)) {
        const int b = it.at.seq;
        ASSERT_EQ(it.at.padded_row, first[b]);
        ASSERT_EQ(it.at.queries, s.queries(b));
        ASSERT_EQ(it.at.keys, s.keys(b));
        by_sequence[b].push_back(it.item);
        for (int i = 0; i < it.item.steps; ++i) {
          const int row0 = first[b] + it.item.q_tile(i) * step;
          ASSERT_GE(row0, first[b]);
          ASSERT_LE(row0 + step, first[b + 1]) << "a step's queries inside the sequence's padded rows";
          const auto part = [&](int p) {  // where the step's dQ part p is reduced
            return bw::dq_step_part_start(it.item.qm(i), row0 / step, p, first.back(), s.head_dim);
          };
          const auto tile = [&](int row) {  // the accumulator's first float of the tile from `row`
            return bw::dq_part_start(it.item.qm(i), row / bw::kDqTileQ, 0, first.back(), s.head_dim);
          };
          ASSERT_GE(part(0), tile(first[b]));
          ASSERT_LE(part(bw::dq_step_parts(s.head_dim) - 1) + bw::kDqPartFloats, tile(first[b + 1]))
              << "the step's dQ parts inside the sequence's accumulator rows";
        }
      }
      for (int b = 0; b < s.batch(); ++b) {
        const bw::Schedule one = bw::sequence_schedule(s, b);
        const int expected = s.queries(b) > 0 && s.keys(b) > 0 ? bw::kv_items(one) : 0;
        ASSERT_EQ(int(by_sequence[b].size()), expected) << "sequence " << b;
        for (int t = 0; t < expected; ++t) {
          const bw::KvItem want = bw::kv_item(one, t, step, staggered), got = by_sequence[b][t];
          ASSERT_EQ(
              std::tie(got.kv_block, got.kvm, got.first_qm, got.first_q, got.per_head, got.steps, got.rotate),
              std::tie(want.kv_block, want.kvm, want.first_qm, want.first_q, want.per_head, want.steps, want.rotate))
              << "sequence " << b << " item " << t;
        }
      }
    }
}

// The dQ items: per sequence with queries, the dense schedule's; a sequence without keys reads no
// key tile (its dQ is stored as 0); rows read inside the sequence's padded rows.
TEST(AttentionVarlenBackward, QueryItemsAreEachSequencesDenseItems) {
  for (const Varlen& s : batches()) {
    SCOPED_TRACE(describe(s));
    const std::vector<int> first = bw::padded_offsets(s);
    std::map<int, std::vector<bw::QItem>> by_sequence;
    for (const bw::VarlenQItem& it : bw::varlen_q_items(s)) {
      const int b = it.at.seq;
      ASSERT_EQ(it.at.padded_row, first[b]);
      ASSERT_LE(first[b] + (it.item.q_block + 1) * bw::kQBlock, first[b + 1]) << "the block's rows in its sequence's";
      if (s.keys(b) == 0) {
        ASSERT_EQ(it.item.tiles, 0) << "no key tile where the sequence has no keys";
      }
      by_sequence[b].push_back(it.item);
    }
    for (int b = 0; b < s.batch(); ++b) {
      const bw::Schedule one = bw::sequence_schedule(s, b);
      const int expected = s.queries(b) > 0 ? bw::q_items(one) : 0;
      ASSERT_EQ(int(by_sequence[b].size()), expected) << "sequence " << b;
      for (int t = 0; t < expected; ++t) {
        const bw::QItem want = bw::q_item(one, t), got = by_sequence[b][t];
        ASSERT_EQ(std::tie(got.q_block, got.qm, got.kvm, got.tiles),
                  std::tie(want.q_block, want.qm, want.kvm, want.tiles));
      }
    }
  }
}

// The grid's blocks take items in order: the longest sequence's first.
TEST(AttentionVarlenBackward, LongestSequencesComeFirst) {
  const Varlen s = packed({100, 3000, 0, 900, 3000}, {100, 3000, 7, 900, 2999}, true);
  EXPECT_EQ(bw::longest_sequences_first(s), (std::vector<int>{1, 4, 3, 0, 2}));
  const std::vector<bw::VarlenKvItem> items = bw::varlen_kv_items(s, 64, false);
  ASSERT_FALSE(items.empty());
  EXPECT_EQ(items.front().at.seq, 1);
  EXPECT_EQ(items.back().at.seq, 0);
}

TEST(AttentionVarlenBackward, QuerylessSequencesKeysAreZeroed) {
  const Varlen s = packed({0, 3, 0, 5}, {4, 0, 0, 2}, false);
  const std::vector<attention::RowRange> rows = bw::queryless_keys(s);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].first, 0);
  EXPECT_EQ(rows[0].count, 4);
}

// Two vectors of heads x the padded rows, then (reducing) the accumulator of D floats a row.
TEST(AttentionVarlenBackward, ScratchHoldsEachSequencePadded) {
  const Varlen s = packed({1, 0, 129, 128}, {5, 5, 5, 5}, false, 64);
  const std::size_t rows = 128 + 0 + 256 + 128, vectors = 2 * rows * s.heads * sizeof(float);
  EXPECT_EQ(attention::backward_scratch_bytes(s, {.dq = attention::DqPath::deterministic}), vectors);
  EXPECT_EQ(attention::backward_scratch_bytes(s, {.dq = attention::DqPath::reducing}),
            vectors + rows * s.heads * 64 * sizeof(float));
  EXPECT_DOUBLE_EQ(attention::flops_backward(s), 2.5 * attention::flops(s));
}

TEST(AttentionVarlenBackward, BadTensorsAreRefusedBeforeAnyLaunch) {
  const auto fake = [](int tensor, std::uintptr_t offset = 0) {
    return reinterpret_cast<__nv_bfloat16*>(std::uintptr_t(1) << 20 | std::uintptr_t(tensor) << 12 | offset);
  };
  const attention::BackwardTensors t{fake(0), fake(1), fake(2), fake(3), fake(4), reinterpret_cast<float*>(fake(5)),
                                     fake(6), fake(7), fake(8)};
  const Varlen s = packed({5, 0, 300}, {7, 1, 0}, true);
  EXPECT_EQ(attention::refusal(t, s), "");
  EXPECT_TRUE(mentions(
      attention::refusal(attention::BackwardTensors{t.q, t.k, t.v, t.o, t.d_o, t.lse, fake(6, 8), t.dk, t.dv}, s),
      "dq: "));
  EXPECT_TRUE(mentions(attention::refusal(t, s, {.dk = attention::PackedStrides{64, 128}}), "dk: "));
  EXPECT_TRUE(mentions(attention::refusal(t, s, {.d_o = attention::PackedStrides{2 * 128 + 4, 128}}), "16 bytes"));
  Varlen d256 = s;
  d256.head_dim = 256;
  EXPECT_EQ(attention::refusal(t, d256), "head dim = 256: the backward takes 64 or 128");
  Varlen bad = s;
  bad.cu_seqlens_k[0] = 1;
  EXPECT_TRUE(mentions(attention::refusal(t, bad), "the first offset must be 0"));
  EXPECT_THROW(attention::VarlenBackward(t, bad), std::invalid_argument);
}
