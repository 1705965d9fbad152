#pragma once
// Which elements a lane holds in the DSL's register tiles and vectors (tk/types/rt.cuh, rv.cuh),
// as constexpr math shared by the device code and the host tests.
//
// A tile is an array of 16x16 subtiles, row-major. Per subtile a lane (g = lane/4, t = lane%4)
// holds four pairs of elements: in a row_l tile pair p holds row g + 8*(p%2), columns
// 8*(p/2) + 2t and +1. That is mma.sync's m16n8k16 A fragment register for register (PTX ISA
// 9.7.13.4), and for a float tile 16 rows high wgmma's accumulator registers in order
// (fragments.hpp). A col_l tile holds the transpose: pair p holds rows 8*(p/2) + 2t and +1 of
// column g + 8*(p%2), which is mma.sync's B fragment (pairs 0 and 2 for columns 0-7, 1 and 3
// for columns 8-15).
#include "tk/layout/fragments.hpp"

namespace tk::layout {

enum class RtLayout { row, col };
enum class RvLayout { group, quad };

inline constexpr int kSubtile = 16;
inline constexpr int kPairsPerSubtile = 4;

// Element e (0 = x, 1 = y) of pair p (0..3) of `lane`, within its 16x16 subtile.
constexpr Coord rt_pair(int lane, int p, int e, RtLayout layout) {
  const Coord c{group_of(lane) + 8 * (p % 2), 8 * (p / 2) + 2 * thread_in_group(lane) + e};
  return layout == RtLayout::row ? c : Coord{c.col, c.row};
}

// Scalar f of a lane's registers in memory order (subtiles row-major, then pairs, then x/y),
// in a tile `cols` wide.
constexpr Coord rt_element(int lane, int f, int cols, RtLayout layout) {
  const int pair = f / 2, subtile = pair / kPairsPerSubtile, across = cols / kSubtile;
  const Coord in = rt_pair(lane, pair % kPairsPerSubtile, f % 2, layout);
  return {kSubtile * (subtile / across) + in.row, kSubtile * (subtile % across) + in.col};
}

// Vectors hold, replicated across the lanes that share them, what a lane needs of a row_l
// tile's rows or columns. group: entries g and g+8 of every 16 (the rows a lane holds; one pair
// per 16 entries, replicated over the 4 lanes of a group). quad: entries 2t, 2t+1, 2t+8, 2t+9
// of every 16 (the columns a lane holds; two pairs per 16, replicated over the 8 groups).
constexpr int rv_pairs_per_16(RvLayout layout) { return layout == RvLayout::group ? 1 : 2; }

// The entry that scalar f of a lane's vector registers holds.
constexpr int rv_entry(int lane, int f, RvLayout layout) {
  if (layout == RvLayout::group) return kSubtile * (f / 2) + group_of(lane) + 8 * (f % 2);
  return kSubtile * (f / 4) + 8 * (f / 2 % 2) + 2 * thread_in_group(lane) + f % 2;
}

// ldmatrix / stmatrix .x4 (PTX ISA 9.7.13.4.15, 9.7.13.4.16): lanes 8m..8m+7 address rows 0..7
// of 8x8 matrix m, and register m of lane l holds row g, columns 2t and 2t+1 of matrix m (with
// .trans: rows 2t and 2t+1 of column g). Register m is pair m of the subtile, so matrix m is
// the 8x8 block at (8*(m%2), 8*(m/2)) for a row_l tile, read plainly, and the block at
// (8*(m/2), 8*(m%2)) for a col_l tile, read with .trans. This is the subtile element at the
// start of the 8-element (16-byte) row that `lane` addresses.
constexpr Coord ldmatrix_row(int lane, RtLayout layout) {
  const int m = lane / 8, r = lane % 8;
  return layout == RtLayout::row ? Coord{8 * (m % 2) + r, 8 * (m / 2)} : Coord{8 * (m / 2) + r, 8 * (m % 2)};
}

}  // namespace tk::layout
