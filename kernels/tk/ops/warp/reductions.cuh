#pragma once
// Row and column reductions and broadcasts at warp scope, on register tiles of either layout.
// One implementation serves both layouts and both axes, through the layout math of
// tk/layout/rt_layout.hpp: a lane holds, per 16x16 subtile, the entries g and g + 8 of the axis
// its group g picks (a row_l tile's rows, a col_l tile's columns) and the entries 2t, 2t+1,
// 2t+8, 2t+9 of the other. The vector along an axis (rt::row_vec, rt::col_vec) is group_vl or
// quad_vl to match (layout::rv_layout_along), and layout::rv_scalar_for_pair says which of its
// scalars holds the row (column) of each element of a tile pair. A reduction folds each of a
// lane's elements into that scalar (through kChains partial results), then combines the lanes
// that share it with a butterfly over layout::rv_replica_bits: xor 1, 2 (group_vl, the 4 lanes of
// a group) or xor 4, 8, 16 (quad_vl, the 8 groups). Results are replicated over those lanes.
// Reductions run in float and round once.
//
//   warp::row_max(m, s, m);  warp::sub_row(s, s, m);  warp::exp2(s, s);  warp::row_sum(l, s, l);
#include <type_traits>

#include "tk/ops/warp/pair_math.cuh"
#include "tk/types/rt.cuh"

namespace tk::warp {
namespace detail {

inline constexpr unsigned kFullWarp = 0xffffffffu;

// v combined over the lanes that differ from this one only in `bits`.
template <class Op>
__device__ __forceinline__ float butterfly(float v, int bits) {
#pragma unroll
  for (int m = 1; m < 32; m *= 2)
    if (bits & m) v = Op::apply(v, __shfl_xor_sync(kFullWarp, v, m));
  return v;
}

// x's two scalars combined over the lanes that hold replicas of them (a vector of layout vl).
template <class Op>
__device__ __forceinline__ float2 across_replicas(float2 x, layout::RvLayout vl) {
  const int bits = layout::rv_replica_bits(vl);
  return {butterfly<Op>(x.x, bits), butterfly<Op>(x.y, bits)};
}

// The vector type along axis A of tile RT.
template <class RT, layout::Axis A>
using vec_along = std::conditional_t<A == layout::Axis::row, typename RT::row_vec, typename RT::col_vec>;

// Which 16-entry block of the vector along A subtile (i, j) lines up with.
template <layout::Axis A>
__device__ __forceinline__ constexpr int block_of(int i, int j) {
  return A == layout::Axis::row ? i : j;
}

// The vector's two values for tile pair p of a subtile in block `block`: a scalar twice
// ({x, x} or {y, y} of one vector pair) or one vector pair as it stands (rt_layout.hpp).
template <class V>
__device__ __forceinline__ typename V::pair vector_pair(const V& v, int block, int p) {
  constexpr layout::RvLayout vl = V::vec_layout::value;
  constexpr int per_block = 2 * layout::rv_pairs_per_16(vl);
  const int s0 = per_block * block + layout::rv_scalar_for_pair(p, 0, vl);
  const int s1 = per_block * block + layout::rv_scalar_for_pair(p, 1, vl);
  const typename V::pair& pair = v.data[s0 / 2];
  if (s0 == s1) return s0 % 2 == 0 ? lows(pair) : highs(pair);
  return pair;  // s1 == s0 + 1, s0 even
}

// Partial results per scalar of a reduction. Folded into one, a 16 x 128 tile's row would be a
// chain of 32 dependent FMNMX (FADD), each waiting out the one before: on the attention
// forward's critical path (S, row max, exponentials, P V) that latency idles the tensor cores.
// Four independent chains, combined as a tree at the end, cut it to 8 + 2.
inline constexpr int kChains = 4;

// v = Op over axis A's lines of s (one entry per row for A = row), then Op(prev, v) with prev.
// Each scalar's k-th element goes to chain k % kChains; `taken` counts them. The loops unroll,
// so every count is a constant and the branches on it fold away.
// Across = false leaves out the butterfly: each lane keeps its own part (row_sum_part).
template <class Op, layout::Axis A, class RT, bool Across = true>
__device__ __forceinline__ void reduce(vec_along<RT, A>& v, const RT& s, const vec_along<RT, A>* prev) {
  using V = vec_along<RT, A>;
  constexpr layout::RvLayout vl = V::vec_layout::value;
  constexpr int per_block = 2 * layout::rv_pairs_per_16(vl), scalars = 2 * V::pairs;
  float acc[kChains][scalars];
  int taken[scalars];
#pragma unroll
  for (int f = 0; f < scalars; ++f) {
    taken[f] = 0;
#pragma unroll
    for (int c = 0; c < kChains; ++c) acc[c][f] = Op::identity;
  }
  const auto fold = [&](int f, float x) {
    float& a = acc[taken[f] % kChains][f];
    a = taken[f] < kChains ? x : Op::apply(a, x);
    ++taken[f];
  };
#pragma unroll
  for (int i = 0; i < RT::subtile_rows; ++i)
#pragma unroll
    for (int j = 0; j < RT::subtile_cols; ++j)
#pragma unroll
      for (int p = 0; p < layout::kPairsPerSubtile; ++p) {
        const float2 x = to_float2(s.at(i, j, p));
        const int base = per_block * block_of<A>(i, j);
        fold(base + layout::rv_scalar_for_pair(p, 0, vl), x.x);
        fold(base + layout::rv_scalar_for_pair(p, 1, vl), x.y);
      }
#pragma unroll
  for (int f = 0; f < scalars; ++f)
#pragma unroll
    for (int width = 1; width < kChains; width *= 2)
#pragma unroll
      for (int c = 0; c + width < kChains; c += 2 * width)
        if (c + width < taken[f]) acc[c][f] = Op::apply(acc[c][f], acc[c + width][f]);
#pragma unroll
  for (int k = 0; k < V::pairs; ++k) {
    float2 r{acc[0][2 * k], acc[0][2 * k + 1]};
    if constexpr (Across) r = across_replicas<Op>(r, vl);
    if (prev != nullptr) {
      const float2 q = to_float2(prev->data[k]);
      r = {Op::apply(q.x, r.x), Op::apply(q.y, r.y)};
    }
    v.data[k] = from_float2<typename V::pair>(r);
  }
}

// d(r, c) = op(s(r, c), v(r)) for A = row, op(s(r, c), v(c)) for A = col. `op` may carry state
// (warp::exp2_row's scale).
template <layout::Axis A, class RT, class Op>
__device__ __forceinline__ void broadcast(RT& d, const RT& s, const vec_along<RT, A>& v, const Op& op) {
#pragma unroll
  for (int i = 0; i < RT::subtile_rows; ++i)
#pragma unroll
    for (int j = 0; j < RT::subtile_cols; ++j)
#pragma unroll
      for (int p = 0; p < layout::kPairsPerSubtile; ++p)
        d.at(i, j, p) = op.apply(s.at(i, j, p), vector_pair(v, block_of<A>(i, j), p));
}

}  // namespace detail

// v = max (sum) of each row of s; with `prev`: v = max(prev, ...) (prev + ...). v may be prev.
// v is rt::row_vec: group_vl for a row_l tile, quad_vl for a col_l one.
template <class T, int R, int C, class L>
__device__ __forceinline__ void row_max(typename rt<T, R, C, L>::row_vec& v, const rt<T, R, C, L>& s) {
  detail::reduce<detail::max_reduce, layout::Axis::row>(v, s, nullptr);
}
template <class T, int R, int C, class L>
__device__ __forceinline__ void row_max(typename rt<T, R, C, L>::row_vec& v, const rt<T, R, C, L>& s,
                                        const typename rt<T, R, C, L>::row_vec& prev) {
  detail::reduce<detail::max_reduce, layout::Axis::row>(v, s, &prev);
}
template <class T, int R, int C, class L>
__device__ __forceinline__ void row_sum(typename rt<T, R, C, L>::row_vec& v, const rt<T, R, C, L>& s) {
  detail::reduce<detail::sum_reduce, layout::Axis::row>(v, s, nullptr);
}
template <class T, int R, int C, class L>
__device__ __forceinline__ void row_sum(typename rt<T, R, C, L>::row_vec& v, const rt<T, R, C, L>& s,
                                        const typename rt<T, R, C, L>::row_vec& prev) {
  detail::reduce<detail::sum_reduce, layout::Axis::row>(v, s, &prev);
}

// A row sum in parts: v = prev + this lane's own share of each row of s, without the exchange
// between the lanes that share a row (4 SHFL and 4 FADD a 16-row tile). A running sum kept in
// parts (the online softmax's l) needs the exchange once, at the end: sum_row_parts.
template <class T, int R, int C, class L>
__device__ __forceinline__ void row_sum_part(typename rt<T, R, C, L>::row_vec& v, const rt<T, R, C, L>& s,
                                             const typename rt<T, R, C, L>::row_vec& prev) {
  detail::reduce<detail::sum_reduce, layout::Axis::row, rt<T, R, C, L>, false>(v, s, &prev);
}
// v = the whole of each row's sum, from parts kept by row_sum_part (replicated, as row_sum's).
template <class V>
__device__ __forceinline__ void sum_row_parts(V& v) {
#pragma unroll
  for (int k = 0; k < V::pairs; ++k)
    v.data[k] = detail::from_float2<typename V::pair>(
        detail::across_replicas<detail::sum_reduce>(detail::to_float2(v.data[k]), V::vec_layout::value));
}

// The max (sum) of one scalar a lane over all 32 lanes of the warp, in every lane: the same
// butterfly, for values that are no tile's (such as a split per lane in a combine).
inline constexpr int kEveryLane = 31;  // the lane-index bits the butterfly crosses
__device__ __forceinline__ float lanes_max(float x) { return detail::butterfly<detail::max_reduce>(x, kEveryLane); }
__device__ __forceinline__ float lanes_sum(float x) { return detail::butterfly<detail::sum_reduce>(x, kEveryLane); }

// v = max (sum) of each column of s, v rt::col_vec (quad_vl for row_l, group_vl for col_l);
// with `prev` as for the rows.
template <class T, int R, int C, class L>
__device__ __forceinline__ void col_max(typename rt<T, R, C, L>::col_vec& v, const rt<T, R, C, L>& s) {
  detail::reduce<detail::max_reduce, layout::Axis::col>(v, s, nullptr);
}
template <class T, int R, int C, class L>
__device__ __forceinline__ void col_max(typename rt<T, R, C, L>::col_vec& v, const rt<T, R, C, L>& s,
                                        const typename rt<T, R, C, L>::col_vec& prev) {
  detail::reduce<detail::max_reduce, layout::Axis::col>(v, s, &prev);
}
template <class T, int R, int C, class L>
__device__ __forceinline__ void col_sum(typename rt<T, R, C, L>::col_vec& v, const rt<T, R, C, L>& s) {
  detail::reduce<detail::sum_reduce, layout::Axis::col>(v, s, nullptr);
}
template <class T, int R, int C, class L>
__device__ __forceinline__ void col_sum(typename rt<T, R, C, L>::col_vec& v, const rt<T, R, C, L>& s,
                                        const typename rt<T, R, C, L>::col_vec& prev) {
  detail::reduce<detail::sum_reduce, layout::Axis::col>(v, s, &prev);
}

// d = s op v, v broadcast along each row (xxx_row: v is rt::row_vec, one value per row) or
// column (xxx_col: rt::col_vec). d may be s.
#define TK_WARP_BROADCAST(name)                                                                             \
  template <class T, int R, int C, class L>                                                                 \
  __device__ __forceinline__ void name##_row(rt<T, R, C, L>& d, const rt<T, R, C, L>& s,                    \
                                             const typename rt<T, R, C, L>::row_vec& v) {                   \
    detail::broadcast<layout::Axis::row>(d, s, v, detail::name##_op{});                                     \
  }                                                                                                         \
  template <class T, int R, int C, class L>                                                                 \
  __device__ __forceinline__ void name##_col(rt<T, R, C, L>& d, const rt<T, R, C, L>& s,                    \
                                             const typename rt<T, R, C, L>::col_vec& v) {                   \
    detail::broadcast<layout::Axis::col>(d, s, v, detail::name##_op{});                                     \
  }
TK_WARP_BROADCAST(add)
TK_WARP_BROADCAST(sub)
TK_WARP_BROADCAST(mul)
TK_WARP_BROADCAST(div)
#undef TK_WARP_BROADCAST

}  // namespace tk::warp
