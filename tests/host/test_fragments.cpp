// The register-fragment maps (kernels/tk/layout/fragments.hpp) and the wgmma descriptor: each
// map places every element of its tile exactly once, and known entries sit where the PTX ISA's
// figures put them. The tensor-core GPU tests then prove the same maps against the hardware.
#include <gtest/gtest.h>

#include <set>

#include "kernels/tk/layout/fragments.hpp"
#include "kernels/tk/layout/wgmma_descriptor.hpp"

using namespace tk::layout;

namespace {

template <class Map>
std::set<std::pair<int, int>> covered(int lanes, int regs, int per_reg, Map map, int* count) {
  std::set<std::pair<int, int>> seen;
  *count = 0;
  for (int lane = 0; lane < lanes; ++lane)
    for (int r = 0; r < regs; ++r)
      for (int j = 0; j < per_reg; ++j, ++*count) {
        const Coord c = map(lane, r, j);
        seen.insert({c.row, c.col});
      }
  return seen;
}

}  // namespace

TEST(Fragments, AAndBCoverTheirTilesOnce) {
  for (int bytes : {1, 2, 4}) {
    const int k = kRowBytesPerK / bytes, per_reg = 4 / bytes;
    int count = 0;
    const auto a = covered(32, 4, per_reg, [&](int l, int r, int j) { return a_fragment(l, r, j, bytes); }, &count);
    EXPECT_EQ(count, 16 * k);
    EXPECT_EQ(a.size(), std::size_t(16 * k)) << bytes;
    EXPECT_EQ(*a.rbegin(), (std::pair{15, k - 1}));
    const auto b = covered(32, 2, per_reg, [&](int l, int r, int j) { return b_fragment(l, r, j, bytes); }, &count);
    EXPECT_EQ(b.size(), std::size_t(8 * k)) << bytes;
    EXPECT_EQ(*b.rbegin(), (std::pair{k - 1, 7}));
  }
}

TEST(Fragments, KnownEntries) {
  // m16n8k16 bf16 A: lane 5 (group 1, thread 1) register 3 holds row 9, columns 10-11.
  EXPECT_EQ(a_fragment(5, 3, 0, 2), (Coord{9, 10}));
  EXPECT_EQ(a_fragment(5, 3, 1, 2), (Coord{9, 11}));
  // m16n8k8 tf32 A: register 2 holds row g, column t + 4.
  EXPECT_EQ(a_fragment(6, 2, 0, 4), (Coord{1, 6}));
  // m16n8k32 fp8 B: register 1 of lane 7 holds k = 16 + 12..15 of column 1.
  EXPECT_EQ(b_fragment(7, 1, 0, 1), (Coord{28, 1}));
  // Accumulators: lane 5 value 3 is (g + 8, 2t + 1); warp 1 starts at row 16; chunk 2 at column 16.
  EXPECT_EQ(accumulator(5, 3), (Coord{9, 3}));
  EXPECT_EQ(accumulator(32, 0), (Coord{16, 0}));
  EXPECT_EQ(accumulator(0, 8), (Coord{0, 16}));
}

TEST(Fragments, WgmmaAccumulatorsCoverTheTileOnce) {
  for (int n : {8, 64, 256}) {
    int count = 0;
    const auto d = covered(128, n / 2, 1, [](int t, int v, int) { return accumulator(t, v); }, &count);
    EXPECT_EQ(d.size(), std::size_t(64 * n)) << n;
    EXPECT_EQ(*d.rbegin(), (std::pair{63, n - 1}));
  }
}

TEST(WgmmaDescriptor, FieldsSitWhereThePtxIsaPutsThem) {
  const std::uint64_t d = wgmma_descriptor(0x1400, 16, 1024, Swizzle::b128);
  EXPECT_EQ(d & 0x3fff, 0x140u);             // start address >> 4
  EXPECT_EQ((d >> 16) & 0x3fff, 1u);         // leading byte offset >> 4
  EXPECT_EQ((d >> 32) & 0x3fff, 64u);        // stride byte offset >> 4
  EXPECT_EQ(d >> 62, 1u);                    // 128B swizzle
  EXPECT_EQ(wgmma_descriptor(0, 0, 0, Swizzle::b32) >> 62, 3u);
  EXPECT_EQ(wgmma_descriptor(0, 0, 0, Swizzle::b64) >> 62, 2u);
  EXPECT_EQ(wgmma_descriptor(0x40000, 0, 0, Swizzle::none), 0u);  // 18-bit shared addresses only
}

// warpgroup::mma's K slices: the slice-0 descriptor advanced by the slice's bytes is the
// descriptor built from the slice's address, at every 16-byte-aligned address a CTA can have.
TEST(WgmmaDescriptor, AdvancingEqualsBuildingFromTheAddress) {
  for (const Swizzle mode : {Swizzle::none, Swizzle::b32, Swizzle::b64, Swizzle::b128}) {
    for (std::uint32_t base = 0; base < kSharedAddressLimit; base += 0x1230) {
      for (std::uint32_t bytes : {0u, 32u, 96u, 1024u, 8192u, 0x10000u}) {
        if (base + bytes >= kSharedAddressLimit) continue;
        EXPECT_EQ(advance(wgmma_descriptor(base, 16, 1024, mode), bytes), wgmma_descriptor(base + bytes, 16, 1024, mode))
            << base << " + " << bytes;
      }
    }
  }
}

// The fp32 accumulator -> e4m3 A operand conversion (fragments.hpp, p8_*): the key permutation is
// a bijection on each 32-column slice with p8_column its inverse; and for every thread of a warp,
// every A register and byte of every 32-column slice, the accumulator value p8_source names is the
// element of S that the PTX ISA's k32 A fragment (a_fragment with 1-byte elements: rows g / g + 8,
// columns 4t..4t+3 and 16 + 4t..) puts there once its column is read through p8_key.
TEST(Fragments, AccumulatorToE4m3AFragmentStaysInTheThread) {
  std::set<int> keys;
  for (int k = 0; k < 32; ++k) {
    keys.insert(p8_key(k));
    EXPECT_EQ(p8_column(p8_key(k)), k) << k;
  }
  EXPECT_EQ(keys.size(), 32u);
  EXPECT_EQ(*keys.rbegin(), 31);
  constexpr int kSlices = 4;  // a 16 x 128 tile of P: four k32 slices
  for (int lane = 0; lane < 32; ++lane)
    for (int s = 0; s < kSlices; ++s)
      for (int reg = 0; reg < 4; ++reg)
        for (int byte = 0; byte < 4; ++byte) {
          const Coord a = a_fragment(lane, reg, byte, 1);
          const Coord held = accumulator(lane, 16 * s + p8_source(reg, byte));  // warp 0's thread `lane`
          EXPECT_EQ(held, (Coord{a.row, 32 * s + p8_key(a.col)})) << lane << " " << s << " " << reg << " " << byte;
        }
  // Spot entries: lane 5 (g 1, t 1), register 2, byte 3 is A (1, 16 + 4 + 3) = S (1, 16 + 8 + 2 + 1).
  EXPECT_EQ(a_fragment(5, 2, 3, 1), (Coord{1, 23}));
  EXPECT_EQ(p8_key(23), 27);
  EXPECT_EQ(p8_source(2, 3), 13);
  EXPECT_EQ(accumulator(5, 13), (Coord{1, 27}));
}
