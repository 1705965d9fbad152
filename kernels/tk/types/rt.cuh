#pragma once
// rt<T, R, C, L>: a warp's register tile of R x C elements (multiples of 16), T = float,
// __nv_bfloat16 or __half, L = row_l or col_l. Each lane holds four pairs per 16x16 subtile,
// subtiles row-major (tk/layout/rt_layout.hpp has the map). A row_l tile is mma.sync's A
// operand and accumulator, and a float rt 16 rows high is wgmma's accumulator registers in
// order; a col_l K x N tile is mma.sync's B operand ("row.col"), as is a row_l N x K tile.
#include <type_traits>

#include "tk/types/rv.cuh"

namespace tk {

struct row_l {
  static constexpr layout::RtLayout value = layout::RtLayout::row;
};
struct col_l {
  static constexpr layout::RtLayout value = layout::RtLayout::col;
};

template <class T, int R, int C, class L = row_l>
struct rt {
  static_assert(R > 0 && R % layout::kSubtile == 0 && C > 0 && C % layout::kSubtile == 0,
                "rt<T, R, C>: R and C must be positive multiples of 16");
  static_assert(std::is_same_v<L, row_l> || std::is_same_v<L, col_l>, "rt<T, R, C, L>: L must be tk::row_l or tk::col_l");
  using element = T;
  using pair = packed<T>;
  using tile_layout = L;
  template <class U>
  using like = rt<U, R, C, L>;  // the same shape and layout holding U
  static constexpr int rows = R, cols = C;
  static constexpr int subtile_rows = R / layout::kSubtile, subtile_cols = C / layout::kSubtile;
  static constexpr int pairs = subtile_rows * subtile_cols * layout::kPairsPerSubtile;  // per lane
  static constexpr bool row_major = std::is_same_v<L, row_l>;
  // The vectors that line up with the tile's rows and columns (rv.cuh): group_vl and quad_vl
  // for a row_l tile, quad_vl and group_vl for a col_l one.
  using row_vec = rv<T, R, vec_layout_of<layout::rv_layout_along(L::value, layout::Axis::row)>>;
  using col_vec = rv<T, C, vec_layout_of<layout::rv_layout_along(L::value, layout::Axis::col)>>;

  // Pair p of subtile (i, j).
  __device__ pair& at(int i, int j, int p) { return data[(i * subtile_cols + j) * layout::kPairsPerSubtile + p]; }
  __device__ const pair& at(int i, int j, int p) const {
    return data[(i * subtile_cols + j) * layout::kPairsPerSubtile + p];
  }

  pair data[pairs];
};

// Columns [Cs * index, Cs * (index + 1)) of a tile one subtile high, as a tile of their own: the
// same registers, since such a tile's subtiles are stored left to right. Give `index` as a
// constant (or in an unrolled loop): a runtime index would move the tile to local memory.
template <int Cs, class T, int C, class L>
__device__ __forceinline__ rt<T, 16, Cs, L>& column_slice(rt<T, 16, C, L>& t, int index) {
  static_assert(C % Cs == 0, "column_slice: the slice width must divide the tile's columns");
  return reinterpret_cast<rt<T, 16, Cs, L>&>(t.data[index * rt<T, 16, Cs, L>::pairs]);
}

template <int R, int C, class L = row_l>
using rt_fl = rt<float, R, C, L>;
template <int R, int C, class L = row_l>
using rt_bf = rt<__nv_bfloat16, R, C, L>;
template <int R, int C, class L = row_l>
using rt_hf = rt<__half, R, C, L>;

}  // namespace tk
