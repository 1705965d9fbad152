// How the portable attention forward cuts its work (kernels/attention/portable_tiles.hpp),
// simulated for every query row of every block, with as many keys as queries and with more or
// fewer: the key tiles a block walks hold every key a row attends, a warp masks wherever one of
// its rows must not see a key, every row keeps a key of the first tile (so the running max is
// finite from the start), rows attending no key are the ones the store blanks, and the grid
// covers every query tile once. And the shapes the kernel refuses beyond the common rules.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/portable_tiles.hpp"

using namespace attention::portable;
using attention::Mask;

namespace {

// Lengths around the tile sizes, and the attention GPU tests' lengths: for queries and for keys.
constexpr int kSeqs[] = {1, 2, 15, 16, 17, 63, 64, 65, 100, 127, 128, 129, 191, 1000, 4097};

Mask mask_for(int seq, int seq_k, bool causal) { return attention::mask_of({1, 1, 1, seq, 64, causal, seq_k}); }

// f(seq, mask) for every pair of lengths, causal or not, up to the first failure (f's ASSERTs
// end f at its first), so that a wrong cut reports one row rather than millions.
template <class F>
void for_each_shape(F f) {
  for (const bool causal : {false, true})
    for (const int seq : kSeqs)
      for (const int seq_k : kSeqs) {
        if (testing::Test::HasFailure()) return;
        f(seq, mask_for(seq, seq_k, causal));
      }
}

// f(warp_q0, query) for each query row of each warp of the block from q0, past seq included, up
// to the first failure.
template <class F>
void for_each_row(int q0, F f) {
  for (int w = 0; w < kWarps; ++w)
    for (int r = 0; r < kRowsPerWarp; ++r) {
      if (testing::Test::HasFailure()) return;
      f(q0 + w * kRowsPerWarp, q0 + w * kRowsPerWarp + r);
    }
}

std::string describe(int seq, Mask mask) {
  return "seq " + std::to_string(seq) + " keys " + std::to_string(mask.keys) + " causal " + std::to_string(mask.causal);
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
  const Mask mask = mask_for(1000, 1000, true);
  for (int b = 1; b < tiles; ++b) {
    EXPECT_GT(key_tiles(query_tile(b - 1, tiles, true) * kBlockRows, mask),
              key_tiles(query_tile(b, tiles, true) * kBlockRows, mask));
  }
  for_each_shape([](int seq, Mask mask) {
    const int n = query_tiles(seq);
    for (int b = 1; b < n; ++b) {
      ASSERT_GE(key_tiles(query_tile(b - 1, n, mask.causal) * kBlockRows, mask),
                key_tiles(query_tile(b, n, mask.causal) * kBlockRows, mask))
          << describe(seq, mask);
    }
  });
}

TEST(AttentionTiles, WalkedTilesHoldEveryAttendedKey) {
  for_each_shape([](int seq, Mask mask) {
    for (int qt = 0; qt < query_tiles(seq); ++qt) {
      const int q0 = qt * kBlockRows, walked_keys = key_tiles(q0, mask) * kKeys;
      for_each_row(q0, [&](int, int query) {
        if (query >= seq) return;
        for (int key = walked_keys; key < mask.keys; ++key) {
          ASSERT_FALSE(mask.attends(query, key)) << describe(seq, mask) << " query " << query << " key " << key;
        }
      });
    }
  });
}

// Every score a warp keeps unmasked is one its row attends: where needs_mask says no, the
// whole tile is attended by all of the warp's rows (past seq or not).
TEST(AttentionTiles, UnmaskedTilesAreWhollyAttended) {
  for_each_shape([](int seq, Mask mask) {
    for (int qt = 0; qt < query_tiles(seq); ++qt) {
      const int q0 = qt * kBlockRows;
      for (int j = 0; j < key_tiles(q0, mask); ++j) {
        const int key0 = j * kKeys;
        for_each_row(q0, [&](int warp_q0, int query) {
          if (mask.needs_mask(warp_q0, key0, kKeys)) return;
          for (int key = key0; key < key0 + kKeys; ++key) {
            ASSERT_TRUE(mask.attends(query, key)) << describe(seq, mask) << " query " << query << " key " << key;
          }
        });
      }
    }
  });
}

// A row's first key tile always holds a key the kernel leaves unmasked for it (key 0), rows past
// seq and rows attending no key included, so no row's max is -inf and no score becomes
// (-inf) - (-inf) = NaN.
TEST(AttentionTiles, EveryRowKeepsAKeyOfItsFirstTile) {
  for_each_shape([](int seq, Mask mask) {
    for (int qt = 0; qt < query_tiles(seq); ++qt) {
      ASSERT_GE(key_tiles(qt * kBlockRows, mask), 1);
      for_each_row(qt * kBlockRows, [&](int, int query) {
        ASSERT_FALSE(mask.hides(query, 0)) << describe(seq, mask) << " query " << query;
      });
    }
  });
}

// The kernel's softmax is exact for every row that attends a key (it masks just the pairs not
// attended), and the rows it blanks at the store are exactly those attending none.
TEST(AttentionTiles, MaskingDiffersOnlyForRowsAttendingNoKey) {
  for_each_shape([](int seq, Mask mask) {
    for (int query = 0; query < query_tiles(seq) * kBlockRows; ++query) {
      bool any = false;
      for (int key = 0; key < key_tiles(query / kBlockRows * kBlockRows, mask) * kKeys; ++key) {
        any = any || mask.attends(query, key);
        if (!mask.attends_none(query)) {
          ASSERT_EQ(mask.hides(query, key), !mask.attends(query, key))
              << describe(seq, mask) << " query " << query << " key " << key;
        }
      }
      ASSERT_EQ(mask.attends_none(query), !any) << describe(seq, mask) << " query " << query;
    }
  });
}

TEST(AttentionTiles, CausalBlocksStopAtTheDiagonal) {
  const Mask square = mask_for(4097, 4097, true);
  EXPECT_EQ(key_tiles(0, square), 1);
  EXPECT_EQ(key_tiles(kBlockRows, square), 2);
  EXPECT_EQ(key_tiles(4096, square), 4096 / kKeys + 1);
  EXPECT_EQ(key_tiles(0, mask_for(4097, 4097, false)), 4096 / kKeys + 1);
  // Bottom-right: 64 queries over 4096 keys see them all; 4096 queries over 64 keys leave the
  // first blocks none (one tile walked all the same), the last all 64.
  EXPECT_EQ(key_tiles(0, mask_for(64, 4096, true)), 4096 / kKeys);
  EXPECT_EQ(key_tiles(0, mask_for(100, 4096, true)), ceil_div(4096 - 100 + kBlockRows, kKeys));
  EXPECT_EQ(key_tiles(0, mask_for(4096, 64, true)), 1);
  EXPECT_EQ(key_tiles(4096 - kBlockRows, mask_for(4096, 64, true)), 1);
  EXPECT_EQ(key_tiles(4096 - kBlockRows, mask_for(4096, 65, true)), 2);
}

TEST(AttentionTiles, PortableKernelRefusesHeadsTooLongForIntOffsets) {
  const auto refusal = [](int seq, int head_dim, int seq_k = 0) {
    return attention::refusal({1, 1, 1, seq, head_dim, false, seq_k}, attention::Kernel::mma_sync);
  };
  EXPECT_EQ(refusal(16384, 128), "");
  EXPECT_EQ(refusal(1, 64), "");
  EXPECT_NE(refusal(1 << 24, 128).find("seq = 16777216: give at most"), std::string::npos) << refusal(1 << 24, 128);
  EXPECT_EQ(refusal(1 << 24, 64), "");
  EXPECT_EQ(refusal(1, 128, 16384), "");
  EXPECT_NE(refusal(1, 128, 1 << 24).find("seq k = 16777216: give at most"), std::string::npos)
      << refusal(1, 128, 1 << 24);
  EXPECT_EQ(refusal(1 << 24, 64, 1), "");
}
