// How the decode kernel cuts its work (kernels/attention/decode.hpp), for every edge: the row
// chunks hold every query row once in whole tiles the warps can share; the splits of a sequence's
// keys are whole key tiles, in order, disjoint, covering exactly the keys its rows attend; the split
// rule fills the GPU without splits shorter than kMinSplitKeys; the page walk finds each key's row
// and refuses pages outside the pool; the running max's start rescales a keyless warp by exactly
// 1; the shapes the kernel refuses, each saying what is valid; an e4m3 cache without its scales.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/attention/decode.hpp"

using namespace attention::decode;
using attention::Mask;

namespace {

// Keys around the tile and split sizes, and the GPU tests' lengths.
constexpr int kKeyCounts[] = {0, 1, 2, 63, 64, 65, 100, 255, 256, 257, 1000, 4097, 32768};

Shape shape(int tokens, int heads, int kv_heads, int head_dim = 128) {
  return {1, tokens, heads, kv_heads, head_dim, 16, 8, 8, false, 0};
}

}  // namespace

TEST(AttentionDecode, RowChunksHoldEveryRowOnceInWholeTiles) {
  for (int rows = 1; rows <= 1024; ++rows) {
    const RowCut cut = row_cut(rows);
    SCOPED_TRACE("rows " + std::to_string(rows));
    EXPECT_TRUE(cut.row_tiles == 1 || cut.row_tiles == 2 || cut.row_tiles == kWarps);
    EXPECT_EQ(kWarps % cut.row_tiles, 0);  // the warps of a row tile share a key tile evenly
    EXPECT_EQ(kKeys % (kWarps / cut.row_tiles), 0);
    EXPECT_GE(cut.chunks * cut.row_tiles * kTileRows, rows);
    EXPECT_LT((cut.chunks - 1) * cut.row_tiles * kTileRows, rows);  // no chunk of padding alone
    if (cut.chunks > 1) {
      EXPECT_EQ(cut.row_tiles, kWarps);
    }
    EXPECT_EQ(keys_per_warp(cut.row_tiles) % kTileRows, 0);  // an mma.sync K step
  }
}

TEST(AttentionDecode, RowsAreTokenMajor) {
  const Shape s = shape(3, 32, 8);
  EXPECT_EQ(rows(s), 12);
  for (int r = 0; r < rows(s); ++r) {
    const Row row = row_of(r, group_size(s));
    EXPECT_EQ(row.token * group_size(s) + row.head_in_group, r);
    EXPECT_LT(row.head_in_group, group_size(s));
  }
}

TEST(AttentionDecode, SplitsCoverTheAttendedKeysOnceInWholeTiles) {
  for (const bool causal : {false, true})
    for (const int tokens : {1, 2, 16})
      for (const int keys : kKeyCounts)
        for (const int last_token : {0, tokens - 1})
          for (const int splits : {1, 2, 3, 7, kMaxSplits}) {
            if (testing::Test::HasFailure()) return;
            SCOPED_TRACE("keys " + std::to_string(keys) + " tokens " + std::to_string(tokens) + " last " +
                         std::to_string(last_token) + " splits " + std::to_string(splits) + " causal " +
                         std::to_string(causal));
            const Mask mask{keys, keys - tokens, causal};
            const int attended = mask.key_end(last_token + 1);
            int next = 0;
            for (int split = 0; split < splits; ++split) {
              const KeyRange r = split_keys(keys, split, splits, mask, last_token);
              if (r.begin >= r.end) continue;  // empty: past the tiles, or past what the rows attend
              EXPECT_EQ(r.begin % kKeys, 0);
              EXPECT_EQ(r.begin, next);
              EXPECT_LE(r.end, attended);
              next = r.end;
            }
            EXPECT_EQ(next, attended);
          }
}

TEST(AttentionDecode, SplitRuleFillsTheGpuWithoutShortSplits) {
  constexpr int kResident = 132 * 2;
  EXPECT_EQ(splits_for(kResident, 1 << 17, kResident), 1);  // the blocks fill it already
  EXPECT_EQ(splits_for(kResident * 4, 1 << 17, kResident), 1);
  EXPECT_EQ(splits_for(1, 1 << 17, kResident), kResident < kMaxSplits ? kResident : kMaxSplits);
  EXPECT_EQ(splits_for(8, 1 << 17, kResident), 33);  // batch 1, 8 kv heads: 33 x 8 = 264
  EXPECT_EQ(splits_for(8, 8192, kResident), 32);     // no split under kMinSplitKeys = 256
  EXPECT_EQ(splits_for(128, 8192, kResident), 2);    // batch 16: 3 x 128 would start a second wave
  EXPECT_EQ(splits_for(8, kMinSplitKeys * 3, kResident), 3);
  EXPECT_EQ(splits_for(8, 1, kResident), 1);
  for (int blocks = 1; blocks < 600; blocks += 7)
    for (const int keys : kKeyCounts) {
      const int n = splits_for(blocks, keys, kResident);
      EXPECT_GE(n, 1);
      EXPECT_LE(n, kMaxSplits);
      if (n > 1) {
        EXPECT_GE(keys, (n - 1) * kMinSplitKeys);
        EXPECT_LE(n * blocks, kResident);  // one wave
      }
    }
}

TEST(AttentionDecode, DividerDividesEveryKeyExactly) {
  static_assert(quotient(1000, divider_for(7)) == 142 && quotient(0x7fffffff, divider_for(1)) == 0x7fffffff);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> any_key(0, std::numeric_limits<int>::max());
  std::vector<int> divisors = {std::numeric_limits<int>::max(), (1 << 30) + 1, 1 << 30, 65535, 65537};
  for (int d = 1; d <= 1025; ++d) divisors.push_back(d);
  for (int d : divisors) {
    const Divider div = divider_for(d);
    for (int n : {0, 1, d - 1, d, std::numeric_limits<int>::max(), std::numeric_limits<int>::max() - d}) {
      if (n >= 0) ASSERT_EQ(quotient(n, div), n / d) << n << " / " << d;
    }
    for (int i = 0; i < 2000; ++i) {
      const int n = any_key(rng), m = n - n % d;  // a multiple of d, and around it
      ASSERT_EQ(quotient(n, div), n / d) << n << " / " << d;
      ASSERT_EQ(quotient(m, div), m / d) << m << " / " << d;
      if (m > 0) ASSERT_EQ(quotient(m - 1, div), (m - 1) / d) << m - 1 << " / " << d;
    }
  }
}

TEST(AttentionDecode, PageWalkFindsEachKeyAndRefusesPagesOutsideThePool) {
  const int table[] = {5, 0, 3, -1, 9};
  const Divider pages_of_16 = divider_for(16);
  EXPECT_EQ(cache_row(table, 0, pages_of_16, 9), 5 * 16);
  EXPECT_EQ(cache_row(table, 17, pages_of_16, 9), 1);
  EXPECT_EQ(cache_row(table, 47, pages_of_16, 9), 3 * 16 + 15);
  EXPECT_EQ(cache_row(table, 48, pages_of_16, 9), -1);  // a negative entry
  EXPECT_EQ(cache_row(table, 64, pages_of_16, 9), -1);  // page 9 of a pool of 9
  EXPECT_EQ(cache_row(table, 64, pages_of_16, 10), 9 * 16);
  EXPECT_EQ(cache_row(table, 20, divider_for(7), 9), 3 * 7 + 6);  // a page size not a power of two
}

TEST(AttentionDecode, LengthsAreClampedToTheTable) {
  Shape s = shape(1, 8, 8);
  EXPECT_EQ(capacity(s), 128);
  EXPECT_EQ(clamped_keys(-3, s), 0);
  EXPECT_EQ(clamped_keys(100, s), 100);
  EXPECT_EQ(clamped_keys(1000, s), 128);
  EXPECT_EQ(max_keys(s), 128);
  s.max_keys = 50;
  EXPECT_EQ(max_keys(s), 50);
}

// The online softmax rescales by 2^(fma(m_before, scale, -round(m x scale))): for a warp still at
// kNoScore that must be 2^0, not 2^(a rounding residue), which overflows to inf (and l = 0 x inf =
// NaN) or flushes to 0, by the scale. Every head dim's scale, and scales across six decades.
TEST(AttentionDecode, NoScoreRescalesAWarpWithoutKeysByExactlyOne) {
  constexpr float kLog2e = 1.4426950408889634f;
  std::vector<float> scales;
  for (int d : {64, 96, 128, 256}) scales.push_back(1.0f / std::sqrt(float(d)) * kLog2e);
  for (float s = 1e-3f; s < 1e3f; s *= 1.37f) scales.push_back(s);
  for (float scale : scales) {
    const volatile float shift = kNoScore * scale;  // rounded, as the kernel's FMUL
    EXPECT_EQ(std::fma(kNoScore, scale, -shift), 0.0f) << "scale " << scale;
  }
}

TEST(AttentionDecode, RefusalsSayWhatIsValid) {
  EXPECT_EQ(refusal(shape(1, 32, 8)), "");
  EXPECT_EQ(refusal(shape(16, 64, 8, 64)), "");
  EXPECT_NE(refusal(shape(1, 32, 8, 96)).find("give 64 or 128"), std::string::npos);
  EXPECT_NE(refusal(shape(1, 30, 8)).find("multiple of kv_heads"), std::string::npos);
  EXPECT_NE(refusal(shape(0, 32, 8)).find("at least 1"), std::string::npos);
  Shape no_pages = shape(1, 8, 8);
  no_pages.page_size = 0;
  EXPECT_NE(refusal(no_pages).find("page_size"), std::string::npos);
  Shape wide = shape(1, 8, 8);
  wide.page_size = 1 << 16;
  wide.pages_per_seq = 1 << 16;
  EXPECT_NE(refusal(wide).find("fit an int"), std::string::npos);
}

// An e4m3 cache is a shape like any other; without its scales the step is refused before any CUDA
// call (so here, without a GPU), naming what it needs. Its bytes per element count half a bf16's.
TEST(AttentionDecode, E4m3CacheNeedsItsScales) {
  Shape s = shape(1, 32, 8);
  s.cache = Cache::e4m3;
  EXPECT_EQ(refusal(s), "");
  EXPECT_EQ(cache_element_bytes(s), 1);
  EXPECT_EQ(cache_element_bytes(shape(1, 32, 8)), 2);
  const float scale = 1;
  for (auto [k_scale, v_scale] :
       {std::pair<const float*, const float*>{nullptr, nullptr}, {&scale, nullptr}, {nullptr, &scale}}) {
    const Tensors t{nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, k_scale, v_scale};
    try {
      const Decode step(t, s);
      ADD_FAILURE() << "an e4m3 cache without both scales was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("needs k_scale and v_scale"), std::string::npos) << e.what();
    }
  }
}
