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

// Vectors hold, replicated across the lanes that share them, what a lane needs of a tile's rows
// or columns. A lane's g picks a row_l tile's rows and a col_l tile's columns (g + 8 (p%2));
// its t picks the other axis (8 (p/2) + 2t + e). group: entries g and g+8 of every 16 (one pair
// per 16 entries, replicated over the 4 lanes of a group). quad: entries 2t, 2t+1, 2t+8, 2t+9
// of every 16 (two pairs per 16, replicated over the 8 groups).
constexpr int rv_pairs_per_16(RvLayout layout) { return layout == RvLayout::group ? 1 : 2; }

// The entry that scalar f of a lane's vector registers holds.
constexpr int rv_entry(int lane, int f, RvLayout layout) {
  if (layout == RvLayout::group) return kSubtile * (f / 2) + group_of(lane) + 8 * (f % 2);
  return kSubtile * (f / 4) + 8 * (f / 2 % 2) + 2 * thread_in_group(lane) + f % 2;
}

// A tile's two axes: a vector "along rows" has one entry per row (row_max's result), one
// "along columns" one entry per column.
enum class Axis { row, col };

// The vector layout that lines up with a tile's rows or columns (rt::row_vec, rt::col_vec):
// group where the lane's g picks the axis (row_l rows, col_l columns), quad where t does.
constexpr RvLayout rv_layout_along(RtLayout tile, Axis axis) {
  return (tile == RtLayout::row) == (axis == Axis::row) ? RvLayout::group : RvLayout::quad;
}

// Of the 2 * rv_pairs_per_16 scalars a lane holds per 16 entries of a vector of `layout`, the
// one holding the row (column) of element e of tile pair p, in the matching 16-entry block:
// group: p % 2 (both elements share row or column g + 8 (p%2)); quad: 2 (p/2) + e (entry
// 8 (p/2) + 2t + e). So a pair's two elements take either one scalar twice or the two scalars
// of one vector pair, in order: the broadcasts use the vector pair as it stands or one half of it.
constexpr int rv_scalar_for_pair(int p, int e, RvLayout layout) {
  return layout == RvLayout::group ? p % 2 : 2 * (p / 2) + e;
}

// The lanes that hold the same entries of a vector differ only in these lane-index bits: t's
// (1, 2) for group, g's (4, 8, 16) for quad. They are also every lane holding elements of that
// row (column) of the tile, so a butterfly over these bits finishes a reduction.
constexpr int rv_replica_bits(RvLayout layout) { return layout == RvLayout::group ? 0x03 : 0x1c; }

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
