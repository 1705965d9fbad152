// How the portable attention forward cuts its work (kernels/attention/portable_tiles.hpp),
// simulated for every query row of every block: the key tiles a block walks hold every key a
// row attends, a warp masks wherever one of its rows must not see a key, every row attends a
// key of the first tile (so the running max is finite from the start), and the grid covers
// every query tile once. And the one shape the kernel refuses beyond the common rules.
#include <gtest/gtest.h>

#include <set>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/portable_tiles.hpp"

using namespace attention::portable;

namespace {

// Lengths around the tile sizes, and the attention GPU tests' lengths.
constexpr int kSeqs[] = {1, 2, 15, 16, 17, 63, 64, 65, 100, 127, 128, 129, 191, 1000, 4097};

// f(warp_q0, query) for each query row of each warp of the block from q0, past seq included.
template <class F>
void for_each_row(int q0, F f) {
  for (int w = 0; w < kWarps; ++w)
    for (int r = 0; r < kRowsPerWarp; ++r) f(q0 + w * kRowsPerWarp, q0 + w * kRowsPerWarp + r);
}

}  // namespace

TEST(AttentionTiles, BlocksCoverEveryQueryOnce) {
  for (const bool causal : {false, true})
    for (const int seq : kSeqs) {
      const int tiles = query_tiles(seq);
      EXPECT_GE(tiles * kBlockRows, seq);
      EXPECT_LT((tiles - 1) * kBlockRows, seq);
      std::set<int> seen;
      for (int b = 0; b < tiles; ++b) seen.insert(query_tile(b, tiles, causal));
      EXPECT_EQ(seen.size(), std::size_t(tiles));
      EXPECT_EQ(*seen.begin(), 0);
      EXPECT_EQ(*seen.rbegin(), tiles - 1);
    }
}

TEST(AttentionTiles, CausalBlocksRunLongestFirst) {
  const int tiles = query_tiles(1000);
  for (int b = 1; b < tiles; ++b) {
    EXPECT_GT(key_tiles(query_tile(b - 1, tiles, true) * kBlockRows, 1000, true),
              key_tiles(query_tile(b, tiles, true) * kBlockRows, 1000, true));
  }
}

TEST(AttentionTiles, WalkedTilesHoldEveryAttendedKey) {
  for (const bool causal : {false, true})
    for (const int seq : kSeqs)
      for (int qt = 0; qt < query_tiles(seq); ++qt) {
        const int q0 = qt * kBlockRows, walked_keys = key_tiles(q0, seq, causal) * kKeys;
        for_each_row(q0, [&](int, int query) {
          if (query >= seq) return;
          for (int key = walked_keys; key < seq; ++key) {
            EXPECT_FALSE(attends(query, key, seq, causal)) << "seq " << seq << " query " << query << " key " << key;
          }
        });
      }
}

// Every score a warp keeps unmasked is one its row attends: where needs_mask says no, the
// whole tile is attended by all of the warp's rows (past seq or not).
TEST(AttentionTiles, UnmaskedTilesAreWhollyAttended) {
  for (const bool causal : {false, true})
    for (const int seq : kSeqs)
      for (int qt = 0; qt < query_tiles(seq); ++qt) {
        const int q0 = qt * kBlockRows;
        for (int j = 0; j < key_tiles(q0, seq, causal); ++j) {
          const int key0 = j * kKeys;
          for_each_row(q0, [&](int warp_q0, int query) {
            if (needs_mask(key0, warp_q0, seq, causal)) return;
            for (int key = key0; key < key0 + kKeys; ++key) {
              EXPECT_TRUE(attends(query, key, seq, causal))
                  << "seq " << seq << " causal " << causal << " query " << query << " key " << key;
            }
          });
        }
      }
}

// A row's first key tile always holds a key it attends (key 0), rows past seq included, so no
// row's max is -inf and no score becomes (-inf) - (-inf) = NaN.
TEST(AttentionTiles, EveryRowAttendsItsFirstTile) {
  for (const bool causal : {false, true})
    for (const int seq : kSeqs)
      for (int qt = 0; qt < query_tiles(seq); ++qt) {
        EXPECT_GE(key_tiles(qt * kBlockRows, seq, causal), 1);
        for_each_row(qt * kBlockRows, [&](int, int query) { EXPECT_TRUE(attends(query, 0, seq, causal)); });
      }
}

TEST(AttentionTiles, CausalBlocksStopAtTheDiagonal) {
  EXPECT_EQ(key_tiles(0, 4097, true), 1);
  EXPECT_EQ(key_tiles(kBlockRows, 4097, true), 2);
  EXPECT_EQ(key_tiles(4096, 4097, true), 4096 / kKeys + 1);
  EXPECT_EQ(key_tiles(0, 4097, false), 4096 / kKeys + 1);
}

TEST(AttentionTiles, PortableKernelRefusesHeadsTooLongForIntOffsets) {
  const auto refusal = [](int seq, int head_dim) {
    return attention::refusal({1, 1, 1, seq, head_dim, false}, attention::Kernel::mma_sync);
  };
  EXPECT_EQ(refusal(16384, 128), "");
  EXPECT_EQ(refusal(1, 64), "");
  EXPECT_NE(refusal(1 << 24, 128).find("seq = 16777216: give at most"), std::string::npos) << refusal(1 << 24, 128);
  EXPECT_EQ(refusal(1 << 24, 64), "");
}
