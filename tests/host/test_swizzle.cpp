#include <gtest/gtest.h>

#include <set>

#include "kernels/tk/layout/swizzle.hpp"

using tk::layout::swizzle;
using tk::layout::Swizzle;

TEST(Swizzle, NoneIsIdentity) {
  for (std::uint32_t off = 0; off < 4096; off += 2) EXPECT_EQ(swizzle(off, Swizzle::none), off);
}

TEST(Swizzle, Mode128XorsChunkWithRowModEight) {
  for (std::uint32_t row = 0; row < 16; ++row) {
    for (std::uint32_t chunk = 0; chunk < 8; ++chunk) {
      for (std::uint32_t byte = 0; byte < 16; byte += 4) {
        const std::uint32_t off = row * 128 + chunk * 16 + byte;
        EXPECT_EQ(swizzle(off, Swizzle::b128), row * 128 + ((chunk ^ (row % 8)) * 16) + byte);
      }
    }
  }
}

TEST(Swizzle, Mode64And32PermuteFewerChunkBits) {
  // 64B: chunk bits [4,6) ^= line bits [7,9); 32B: chunk bit 4 ^= line bit 7.
  EXPECT_EQ(swizzle(3 * 128 + 0 * 16, Swizzle::b64), 3u * 128 + 3 * 16);
  EXPECT_EQ(swizzle(5 * 128 + 1 * 16, Swizzle::b64), 5u * 128 + (1 ^ 1) * 16);
  EXPECT_EQ(swizzle(1 * 128 + 0 * 16, Swizzle::b32), 1u * 128 + 1 * 16);
  EXPECT_EQ(swizzle(2 * 128 + 0 * 16, Swizzle::b32), 2u * 128);
}

TEST(Swizzle, EveryModeIsAnInvolutionAndABijectionOnItsRepeat) {
  for (Swizzle mode : {Swizzle::b32, Swizzle::b64, Swizzle::b128}) {
    std::set<std::uint32_t> seen;
    for (std::uint32_t off = 0; off < 1024; ++off) {
      EXPECT_EQ(swizzle(swizzle(off, mode), mode), off);
      seen.insert(swizzle(off, mode));
    }
    EXPECT_EQ(seen.size(), 1024u);
    EXPECT_LT(*seen.rbegin(), 1024u);
  }
}

static_assert(swizzle(128 + 16, Swizzle::b128) == 128, "row 1, chunk 1 lands on chunk 0");

TEST(Swizzle, TmaRowsTakeTheWholeSpanUnderASwizzle) {
  EXPECT_EQ(tk::layout::tma_row_pitch(64, Swizzle::b128), 128u);
  EXPECT_EQ(tk::layout::tma_row_pitch(128, Swizzle::b128), 128u);
  EXPECT_EQ(tk::layout::tma_row_pitch(32, Swizzle::b64), 64u);
  EXPECT_EQ(tk::layout::tma_row_pitch(48, Swizzle::none), 48u);  // packed without swizzle
}
