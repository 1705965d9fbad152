#pragma once
// Walking a register tile pair by pair with each element's tile coordinates
// (tk/layout/rt_layout.hpp): what loads, stores and masks need.
#include "tk/layout/rt_layout.hpp"

namespace tk::warp {
namespace detail {

__device__ __forceinline__ int lane_id() {
  int lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

// Calls f(i, j, p, c0, c1) for every pair of a tile: subtile (i, j), pair p, whose elements
// x and y sit at tile coordinates c0 and c1.
template <class RT, class F>
__device__ __forceinline__ void for_each_pair(F&& f) {
  const int lane = lane_id();
#pragma unroll
  for (int i = 0; i < RT::subtile_rows; ++i)
#pragma unroll
    for (int j = 0; j < RT::subtile_cols; ++j)
#pragma unroll
      for (int p = 0; p < layout::kPairsPerSubtile; ++p) {
        const layout::Coord x = layout::rt_pair(lane, p, 0, RT::tile_layout::value);
        const layout::Coord y = layout::rt_pair(lane, p, 1, RT::tile_layout::value);
        const layout::Coord base{layout::kSubtile * i, layout::kSubtile * j};
        f(i, j, p, layout::Coord{base.row + x.row, base.col + x.col}, layout::Coord{base.row + y.row, base.col + y.col});
      }
}

}  // namespace detail
}  // namespace tk::warp
