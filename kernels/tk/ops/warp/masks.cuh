#pragma once
// Masks at warp scope: set the elements of a register tile (either layout) that a predicate of
// their tile coordinates picks. Attention uses them for causal masks and the last, partial key
// tile: the caller shifts the coordinates to global ones in the predicate.
//
//   warp::fill_where(s, -INFINITY, [&](int row, int col) { return kv0 + col > q0 + row; });
#include "tk/ops/warp/pair_math.cuh"
#include "tk/ops/warp/pairs.cuh"
#include "tk/types/rt.cuh"
#include "tk/types/rv.cuh"

namespace tk::warp {

// d(r, c) = value where pred(r, c), else unchanged.
template <class RT, class Pred>
__device__ __forceinline__ void fill_where(RT& d, float value, Pred&& pred) {
  using T = typename RT::element;
  detail::for_each_pair<RT>([&](int i, int j, int p, layout::Coord x, layout::Coord y) {
    float2 v = detail::to_float2(d.at(i, j, p));
    if (pred(x.row, x.col)) v.x = value;
    if (pred(y.row, y.col)) v.y = value;
    d.at(i, j, p) = detail::from_float2<packed<T>>(v);
  });
}

// v[e] = value where pred(e), else unchanged: the entries of a register vector (each lane sets
// the ones it holds), e.g. the rows of a tile that a mask leaves without a key.
template <class T, int N, class L, class Pred>
__device__ __forceinline__ void fill_where(rv<T, N, L>& v, float value, Pred&& pred) {
  const int lane = detail::lane_id();
#pragma unroll
  for (int s = 0; s < rv<T, N, L>::pairs; ++s) {
    float2 pair = detail::to_float2(v.data[s]);
    if (pred(layout::rv_entry(lane, 2 * s, L::value))) pair.x = value;
    if (pred(layout::rv_entry(lane, 2 * s + 1, L::value))) pair.y = value;
    v.data[s] = detail::from_float2<packed<T>>(pair);
  }
}

}  // namespace tk::warp
