// The canonical shared-memory layouts wgmma reads (kernels/tk/layout/wgmma_descriptor.hpp):
// packed tiles are exactly what the TMA writes box by box (so a TMA-loaded tile feeds wgmma
// as it lands), every layout puts each element at its own address, and the descriptor
// carries the base offset where the PTX ISA puts it. `tkprobe wgmma-layout` checks the same
// maps against the hardware.
#include <gtest/gtest.h>

#include <set>

#include "kernels/tk/layout/wgmma_descriptor.hpp"

using namespace tk::layout;

namespace {

constexpr int kElem = 2;  // bf16
constexpr int kK = 16;    // one wgmma's K for 16-bit inputs
constexpr Swizzle kModes[] = {Swizzle::none, Swizzle::b32, Swizzle::b64, Swizzle::b128};

// Where the TMA puts element (row, col) of a box `span` bytes wide: row-major, swizzled.
std::uint32_t tma_box_address(int row, int col, std::uint32_t span, Swizzle mode) {
  return swizzle(row * span + col * kElem, mode);
}

}  // namespace

TEST(WgmmaOperand, PackedKMajorIsTheTmaBoxOfRowsByK) {
  for (Swizzle mode : kModes) {
    const SmemOperand op = packed_operand(Major::k, mode, 64, kK);
    const std::uint32_t span = atom_row_bytes(mode), per_box = span / kElem;
    for (int m = 0; m < 64; ++m)
      for (int k = 0; k < kK; ++k) {
        const std::uint32_t box = k / per_box, box_bytes = 64 * span;
        EXPECT_EQ(operand_address(0, op, m, k, kElem), box * box_bytes + tma_box_address(m, k % per_box, span, mode))
            << int(mode) << " m " << m << " k " << k;
      }
  }
}

TEST(WgmmaOperand, PackedMnMajorIsTheTmaBoxOfKByMn) {
  for (Swizzle mode : kModes) {
    const SmemOperand op = packed_operand(Major::mn, mode, 128, kK);
    const std::uint32_t span = atom_row_bytes(mode), per_box = span / kElem;
    for (int n = 0; n < 128; ++n)
      for (int k = 0; k < kK; ++k) {
        const std::uint32_t box = n / per_box, box_bytes = kK * span;
        EXPECT_EQ(operand_address(0, op, n, k, kElem), box * box_bytes + tma_box_address(k, n % per_box, span, mode))
            << int(mode) << " n " << n << " k " << k;
      }
  }
}

TEST(WgmmaOperand, EveryLayoutGivesEachElementItsOwnAddress) {
  for (Major major : {Major::k, Major::mn})
    for (Swizzle mode : kModes)
      for (int stretch : {1, 2}) {
        SmemOperand op = packed_operand(major, mode, 128, kK);
        op.lbo *= stretch;
        op.sbo *= stretch;
        std::set<std::uint32_t> seen;
        for (int mn = 0; mn < 128; ++mn)
          for (int k = 0; k < kK; ++k) seen.insert(operand_address(0, op, mn, k, kElem));
        EXPECT_EQ(seen.size(), 128u * kK) << int(mode) << " stretch " << stretch;
      }
}

TEST(WgmmaOperand, StridesStepTheDimensionsThePtxIsaNames) {
  // K-major, no swizzle: LBO steps the second 16 bytes of K, SBO the next 8 rows.
  const SmemOperand k_none{Major::k, Swizzle::none, 1024, 256};
  EXPECT_EQ(canonical_offset(k_none, 0, 8, kElem), 1024u);
  EXPECT_EQ(canonical_offset(k_none, 8, 0, kElem), 256u);
  EXPECT_EQ(canonical_offset(k_none, 1, 1, kElem), 16u + 2u);
  // MN-major, 128B: LBO steps the next 64 elements of M/N, SBO the next 8 rows of K.
  const SmemOperand mn_128{Major::mn, Swizzle::b128, 4096, 1024};
  EXPECT_EQ(canonical_offset(mn_128, 64, 0, kElem), 4096u);
  EXPECT_EQ(canonical_offset(mn_128, 0, 8, kElem), 1024u);
  EXPECT_EQ(canonical_offset(mn_128, 9, 1, kElem), 128u + 18u);
  // MN-major, no swizzle: SBO steps the next 8 elements of M/N, LBO the next 8 rows of K.
  const SmemOperand mn_none{Major::mn, Swizzle::none, 512, 256};
  EXPECT_EQ(canonical_offset(mn_none, 8, 0, kElem), 256u);
  EXPECT_EQ(canonical_offset(mn_none, 0, 8, kElem), 512u);
}

TEST(WgmmaOperand, SwizzleFollowsTheAbsoluteAddress) {
  // A K-major 128B tile starting one line past the repeat reads row 0 with line 1's phase.
  const SmemOperand op = packed_operand(Major::k, Swizzle::b128, 64, kK);
  EXPECT_EQ(operand_address(128, op, 0, 0, kElem), 128u + 16u);
  // Advancing the start by 32 bytes of K inside a row lands where the TMA put k + 16.
  EXPECT_EQ(operand_address(32, op, 3, 0, kElem), swizzle(3 * 128 + 32, Swizzle::b128));
}

TEST(WgmmaOperand, DescriptorCarriesTheBaseOffsetInBits49To51) {
  const SmemOperand op = packed_operand(Major::k, Swizzle::b128, 64, kK);
  const std::uint64_t d = wgmma_descriptor(0x480, op, 5);
  EXPECT_EQ((d >> 49) & 7, 5u);
  EXPECT_EQ(d & 0x3fff, 0x48u);
  EXPECT_EQ((d >> 32) & 0x3fff, 1024u >> 4);
  EXPECT_EQ(wgmma_descriptor(0, op, 8) >> 49 & 7, 0u);  // three bits only
}

TEST(WgmmaOperand, TheIsaBaseOffsetRestartsThePatternAtTheStart) {
  // Base offset (start >> 7) & 7, as the PTX ISA asks for an unaligned pattern start, reads the
  // tile as if the start were aligned: start + swizzle(offset).
  const SmemOperand op = packed_operand(Major::k, Swizzle::b128, 64, kK);
  for (std::uint32_t line = 1; line < 8; ++line)
    for (int m = 0; m < 64; ++m)
      for (int k = 0; k < kK; ++k) {
        const std::uint32_t start = line * 128;
        EXPECT_EQ(operand_address(start, op, m, k, kElem, line),
                  start + swizzle(canonical_offset(op, m, k, kElem), Swizzle::b128));
      }
}
