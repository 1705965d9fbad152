// Packed batches (kernels/attention/varlen.hpp): the forward's work items cover every row tile of
// every head of every sequence once, each reading the key tiles its rows attend; with equal
// lengths they come in the dense forward's order; sequences without keys are left to the fill;
// bad offsets and tensors are refused naming what is valid.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/varlen.hpp"
#include "kernels/attention/work_order.hpp"

using attention::Varlen;
using attention::VarlenItem;

namespace {

constexpr int kKeyTile = 128, kTileRows = 64, kGrid = 132;

Varlen packed(const std::vector<int>& queries, const std::vector<int>& keys, bool causal, int heads = 4,
              int kv_heads = 2) {
  return {attention::offsets_of(queries), attention::offsets_of(keys), heads, kv_heads, 128, causal};
}

// Random lengths with the cases a batch may hold: 0, 1, lengths not a multiple of any tile, one long.
std::vector<int> random_lengths(std::mt19937& rng, int count) {
  std::uniform_int_distribution<int> pick(0, 5), short_length(2, 700);
  std::vector<int> out;
  for (int i = 0; i < count; ++i) {
    const int kind = pick(rng);
    out.push_back(kind == 0 ? 0 : kind == 1 ? 1 : kind == 2 ? 4097 : short_length(rng));
  }
  return out;
}

bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Every (sequence, head, 64-row tile) of the queries once among the items' consumer tiles; each
// item's fields as the sequence's, its key tiles those its rows attend.
void expect_items_cover(const Varlen& s, int consumers, bool chunks) {
  std::map<std::tuple<int, int, int>, int> seen;
  for (const VarlenItem& it : attention::varlen_items(s, consumers, kKeyTile, kGrid, chunks)) {
    ASSERT_EQ(it.first_row, s.cu_seqlens_q[it.seq]);
    ASSERT_EQ(it.queries, s.queries(it.seq));
    ASSERT_EQ(it.keys, s.keys(it.seq));
    ASSERT_GT(it.keys, 0) << "a sequence without keys is the fill's";
    const attention::Mask m = s.mask(it.seq);
    const int rows_end = std::min(it.queries, (it.q_tile + consumers) * kTileRows);
    ASSERT_EQ(it.tiles, std::max(1, (m.key_end(rows_end) + kKeyTile - 1) / kKeyTile)) << "sequence " << it.seq;
    for (int w = 0; w < consumers; ++w) {
      const int tile = it.q_tile + w;
      if (tile >= 0 && tile * kTileRows < it.queries) ++seen[std::make_tuple(it.seq, it.head, tile)];
    }
  }
  for (int b = 0; b < s.batch(); ++b) {
    const int expected = s.keys(b) > 0 ? 1 : 0;
    for (int h = 0; h < s.heads; ++h)
      for (int tile = 0; tile * kTileRows < s.queries(b); ++tile) {
        const int count = seen[std::make_tuple(b, h, tile)];
        ASSERT_EQ(count, expected) << "sequence " << b << " head " << h << " tile " << tile;
      }
  }
}

}  // namespace

TEST(AttentionVarlen, ItemsCoverEveryRowTileOnce) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20 && !testing::Test::HasFailure(); ++trial) {
    const std::vector<int> queries = random_lengths(rng, 9);
    std::vector<int> keys = queries;
    if (trial % 2 == 1) keys = random_lengths(rng, 9);  // cross attention: other key counts, some 0
    for (bool causal : {false, true})
      for (int consumers : {2, 3})
        for (bool chunks : {false, true}) expect_items_cover(packed(queries, keys, causal), consumers, chunks);
  }
}

TEST(AttentionVarlen, KeylessRowsAreTheSequencesWithQueriesAndNoKeys) {
  const Varlen s = packed({3, 0, 5, 7}, {0, 0, 2, 0}, true);
  const std::vector<attention::RowRange> rows = attention::keyless_rows(s);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].first, 0);
  EXPECT_EQ(rows[0].count, 3);
  EXPECT_EQ(rows[1].first, 8);
  EXPECT_EQ(rows[1].count, 7);
}

// Equal lengths: the dense forward's orders (hopper/config.cuh's item): head by head without a
// mask; with one, snaked longest first across every head, or chunked a few heads at a time.
TEST(AttentionVarlen, EqualLengthsTakeTheDenseOrder) {
  for (bool causal : {false, true})
    for (bool chunks : {false, true})
      for (int consumers : {2, 3})
        for (int n : {1000, 1024, 4097}) {
          const int batch = 3, heads = 40, block_rows = consumers * kTileRows,
                    q_blocks = (n + block_rows - 1) / block_rows;
          const Varlen s = packed(std::vector<int>(batch, n), std::vector<int>(batch, n), causal, heads, heads);
          const std::vector<VarlenItem> items = attention::varlen_items(s, consumers, kKeyTile, kGrid, chunks);
          ASSERT_EQ(int(items.size()), batch * heads * q_blocks);
          const int lead = causal ? attention::padding_tiles(n, block_rows, kTileRows) : 0;
          for (int t = 0; t < int(items.size()); ++t) {
            const attention::WorkOrder w = !causal  ? attention::head_by_head(t, q_blocks)
                                           : chunks ? attention::chunked(t, kGrid, batch * heads, q_blocks)
                                                    : attention::snaked(t, kGrid, batch * heads, q_blocks);
            const int q_block = causal ? q_blocks - 1 - w.order : w.order;
            ASSERT_EQ(items[t].seq * heads + items[t].head, w.matrix) << "item " << t << " n " << n;
            ASSERT_EQ(items[t].q_tile, q_block * consumers - lead) << "item " << t << " n " << n;
          }
        }
}

// The dense rule for chunks (hopper/config.cuh's causal_chunks): D = 128, as many heads as blocks.
TEST(AttentionVarlen, ChunksWhereTheDenseForwardWould) {
  const Varlen s = packed({1024, 0, 2048}, {1024, 5, 0}, true, 66, 66);  // 66 heads of one sequence with keys
  EXPECT_TRUE(attention::varlen_chunks(s, 128, 66));
  EXPECT_FALSE(attention::varlen_chunks(s, 128, 67));
  EXPECT_FALSE(attention::varlen_chunks(s, 64, 66));
}

TEST(AttentionVarlen, BadOffsetsAreRefusedSayingWhatIsValid) {
  EXPECT_TRUE(mentions(attention::offsets_refusal("cu_seqlens_q", {0}), "give B + 1 >= 2"));
  EXPECT_TRUE(mentions(attention::offsets_refusal("cu_seqlens_q", {1, 5}), "the first offset must be 0"));
  EXPECT_TRUE(
      mentions(attention::offsets_refusal("cu_seqlens_k", {0, 5, 3}), "cu_seqlens_k[2] = 3 < cu_seqlens_k[1] = 5"));
  EXPECT_EQ(attention::offsets_refusal("cu_seqlens_q", {0, 0, 5, 5}), "");
  Varlen s = packed({1, 2}, {1, 2}, false);
  s.cu_seqlens_k.push_back(9);
  EXPECT_TRUE(mentions(attention::offsets_refusal(s), "give B + 1 of each"));
}

TEST(AttentionVarlen, BadTensorsAreRefusedBeforeAnyLaunch) {
  const auto fake = [](int tensor, std::uintptr_t offset = 0) {
    return reinterpret_cast<__nv_bfloat16*>(std::uintptr_t(1) << 20 | std::uintptr_t(tensor) << 12 | offset);
  };
  const attention::Tensors t{fake(0), fake(1), fake(2), fake(3), reinterpret_cast<float*>(fake(4))};
  const Varlen s = packed({5, 0, 300}, {7, 1, 0}, true);
  EXPECT_EQ(attention::refusal(t, s), "");
  EXPECT_EQ(attention::refusal(t, s, {.q = attention::PackedStrides{3 * 4 * 128, 128}}), "");  // a qkv slice
  EXPECT_TRUE(mentions(attention::refusal(t, s, {.k = attention::PackedStrides{2 * 128 + 4, 128}}), "16 bytes"));
  EXPECT_TRUE(mentions(attention::refusal(attention::Tensors{fake(0, 8), t.k, t.v, t.o, t.lse}, s), "16-byte aligned"));
  EXPECT_TRUE(mentions(attention::refusal(t, s, {.o = attention::PackedStrides{128, 128}}), "overlap"));
  Varlen d80 = s;
  d80.head_dim = 80;
  EXPECT_TRUE(mentions(attention::refusal(t, d80), "give 64, 96, 128 or 256"));
  for (int d : {96, 256}) {
    Varlen other = s;
    other.head_dim = d;
    EXPECT_EQ(attention::refusal(t, other), "") << d;
  }
  Varlen bad = s;
  bad.cu_seqlens_q[1] = -1;
  EXPECT_TRUE(mentions(attention::refusal(t, bad), "offsets must not decrease"));
  EXPECT_THROW(attention::VarlenForward(t, bad), std::invalid_argument);
}

TEST(AttentionVarlen, FlopsSumTheSequences) {
  const Varlen s = packed({100, 0, 300}, {200, 5, 0}, true, 4, 2);
  const double expected = attention::flops(attention::Shape{1, 4, 2, 100, 128, true, 200});
  EXPECT_DOUBLE_EQ(attention::flops(s), expected);
}
