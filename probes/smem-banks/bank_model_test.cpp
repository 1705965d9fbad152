#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>

#include "probes/smem-banks/bank_model.hpp"
#include "probes/timed_kernels/smem_banks_kernels.hpp"

namespace banks = tkprobe::banks;
using tk::layout::Swizzle;

TEST(BankModel, FourByteStrideConflictsAreGcdWithBanks) {
  for (int stride = 1; stride <= 64; ++stride) {
    EXPECT_EQ(banks::strided_wavefronts(4, stride), std::gcd(stride, 32)) << "stride " << stride;
  }
  EXPECT_EQ(banks::strided_ways(4, 32), 32);
  EXPECT_EQ(banks::strided_ways(4, 64), 32);
}

TEST(BankModel, WideAccessesNeedSeveralWavefrontsEvenWithoutConflict) {
  EXPECT_EQ(banks::ideal_wavefronts(8), 2);
  EXPECT_EQ(banks::ideal_wavefronts(16), 4);
  EXPECT_EQ(banks::strided_wavefronts(8, 1), 2);
  EXPECT_EQ(banks::strided_wavefronts(16, 1), 4);
  EXPECT_EQ(banks::strided_ways(8, 1), 1);
  EXPECT_EQ(banks::strided_ways(16, 1), 1);
}

TEST(BankModel, WideStridedConflicts) {
  // 8-byte elements 128 bytes apart: every half-warp lands its 16 threads on banks 0-1.
  EXPECT_EQ(banks::strided_wavefronts(8, 16), 32);
  EXPECT_EQ(banks::strided_ways(8, 16), 16);
  // 8-byte, stride 2 (16 bytes): each half-warp spans 256 bytes, two words per bank.
  EXPECT_EQ(banks::strided_ways(8, 2), 2);
  // 16-byte elements 128 bytes apart: each quarter-warp's 8 threads share banks 0-3.
  EXPECT_EQ(banks::strided_ways(16, 8), 8);
}

TEST(BankModel, SameWordIsBroadcast) {
  std::uint32_t same[32] = {};
  EXPECT_EQ(banks::wavefronts(same, 4), 1);
}

TEST(BankModel, LdmatrixRowsConflictUnlessSwizzled) {
  std::uint32_t plain[32], swizzled[32];
  for (int lane = 0; lane < 32; ++lane) {
    plain[lane] = tkprobe::smem_banks::ldmatrix_lane_offset(lane, Swizzle::none);
    swizzled[lane] = tkprobe::smem_banks::ldmatrix_lane_offset(lane, Swizzle::b128);
  }
  EXPECT_EQ(banks::wavefronts(plain, 16), 32);    // 4 matrices x 8-way
  EXPECT_EQ(banks::wavefronts(swizzled, 16), 4);  // one wavefront per 8x8 matrix
}

static_assert(banks::strided_wavefronts(4, 1) == 1, "the model is usable at compile time");
