#pragma once
// Row and column reductions and broadcasts at warp scope, on row_l tiles (the layout of mma
// accumulators, where softmax happens). A lane holds rows g and g+8 of each 16-row subtile,
// spread over the 4 lanes of its group, and columns 2t, 2t+1, 2t+8, 2t+9 of each 16-column
// subtile, spread over the 8 groups (tk/layout/rt_layout.hpp). So a row reduction combines a
// lane's own columns, then the group's lanes (xor 1, 2); a column reduction combines a lane's
// own rows, then the groups (xor 4, 8, 16). Results land in rt::row_vec (group_vl) and
// rt::col_vec (quad_vl), replicated over the lanes that share them. Reductions run in float
// and round once.
//
//   warp::row_max(m, s, m);  warp::sub_row(s, s, m);  warp::exp2(s, s);  warp::row_sum(l, s, l);
#include "tk/ops/warp/pair_math.cuh"
#include "tk/types/rt.cuh"

namespace tk::warp {
namespace detail {

inline constexpr unsigned kFullWarp = 0xffffffffu;

template <class Op>
__device__ __forceinline__ float butterfly(float v, int first_mask, int last_mask) {
#pragma unroll
  for (int m = first_mask; m <= last_mask; m *= 2) v = Op::apply(v, __shfl_xor_sync(kFullWarp, v, m));
  return v;
}

// Row-subtile i of `s` reduced along its rows: x = row g, y = row g + 8.
template <class Op, class T, int R, int C>
__device__ __forceinline__ float2 reduce_rows(const rt<T, R, C, row_l>& s, int i) {
  float2 acc{Op::identity, Op::identity};
#pragma unroll
  for (int j = 0; j < C / layout::kSubtile; ++j)
#pragma unroll
    for (int p = 0; p < layout::kPairsPerSubtile; ++p) {
      const float2 v = to_float2(s.at(i, j, p));
      float& row = p % 2 == 0 ? acc.x : acc.y;
      row = Op::apply(row, Op::apply(v.x, v.y));
    }
  return {butterfly<Op>(acc.x, 1, 2), butterfly<Op>(acc.y, 1, 2)};
}

// Columns 8q + 2t and +1 of column-subtile j of `s`, reduced along the columns.
template <class Op, class T, int R, int C>
__device__ __forceinline__ float2 reduce_cols(const rt<T, R, C, row_l>& s, int j, int q) {
  float2 acc{Op::identity, Op::identity};
#pragma unroll
  for (int i = 0; i < R / layout::kSubtile; ++i)
#pragma unroll
    for (int rows = 0; rows < 2; ++rows) {  // pairs 2q (rows g) and 2q + 1 (rows g + 8)
      const float2 v = to_float2(s.at(i, j, 2 * q + rows));
      acc = {Op::apply(acc.x, v.x), Op::apply(acc.y, v.y)};
    }
  return {butterfly<Op>(acc.x, 4, 16), butterfly<Op>(acc.y, 4, 16)};
}

template <class Op, class V>
__device__ __forceinline__ typename V::pair combine(float2 r, const V* prev, int k) {
  if (prev != nullptr) {
    const float2 p = to_float2(prev->data[k]);
    r = {Op::apply(p.x, r.x), Op::apply(p.y, r.y)};
  }
  return from_float2<typename V::pair>(r);
}

template <class Op, class T, int R, int C>
__device__ __forceinline__ void row_reduce(rv<T, R, group_vl>& v, const rt<T, R, C, row_l>& s,
                                           const rv<T, R, group_vl>* prev) {
#pragma unroll
  for (int i = 0; i < R / layout::kSubtile; ++i) v.data[i] = combine<Op>(reduce_rows<Op>(s, i), prev, i);
}

template <class Op, class T, int R, int C>
__device__ __forceinline__ void col_reduce(rv<T, C, quad_vl>& v, const rt<T, R, C, row_l>& s,
                                           const rv<T, C, quad_vl>* prev) {
#pragma unroll
  for (int j = 0; j < C / layout::kSubtile; ++j)
#pragma unroll
    for (int q = 0; q < 2; ++q) v.data[2 * j + q] = combine<Op>(reduce_cols<Op>(s, j, q), prev, 2 * j + q);
}

// d(r, c) = Op(s(r, c), v(r)).
template <class Op, class T, int R, int C>
__device__ __forceinline__ void row_broadcast(rt<T, R, C, row_l>& d, const rt<T, R, C, row_l>& s,
                                              const rv<T, R, group_vl>& v) {
#pragma unroll
  for (int i = 0; i < R / layout::kSubtile; ++i) {
    const auto lo = lows(v.data[i]), hi = highs(v.data[i]);  // rows g, g + 8
#pragma unroll
    for (int j = 0; j < C / layout::kSubtile; ++j)
#pragma unroll
      for (int p = 0; p < layout::kPairsPerSubtile; ++p) d.at(i, j, p) = Op::apply(s.at(i, j, p), p % 2 == 0 ? lo : hi);
  }
}

// d(r, c) = Op(s(r, c), v(c)): vector pair 2j + p/2 holds exactly pair p's two columns.
template <class Op, class T, int R, int C>
__device__ __forceinline__ void col_broadcast(rt<T, R, C, row_l>& d, const rt<T, R, C, row_l>& s,
                                              const rv<T, C, quad_vl>& v) {
#pragma unroll
  for (int i = 0; i < R / layout::kSubtile; ++i)
#pragma unroll
    for (int j = 0; j < C / layout::kSubtile; ++j)
#pragma unroll
      for (int p = 0; p < layout::kPairsPerSubtile; ++p) d.at(i, j, p) = Op::apply(s.at(i, j, p), v.data[2 * j + p / 2]);
}

}  // namespace detail

// v = max (sum) of each row of s; with `prev`: v = max(prev, ...) (prev + ...). v may be prev.
template <class T, int R, int C>
__device__ __forceinline__ void row_max(rv<T, R, group_vl>& v, const rt<T, R, C, row_l>& s) {
  detail::row_reduce<detail::max_reduce>(v, s, static_cast<const rv<T, R, group_vl>*>(nullptr));
}
template <class T, int R, int C>
__device__ __forceinline__ void row_max(rv<T, R, group_vl>& v, const rt<T, R, C, row_l>& s,
                                        const rv<T, R, group_vl>& prev) {
  detail::row_reduce<detail::max_reduce>(v, s, &prev);
}
template <class T, int R, int C>
__device__ __forceinline__ void row_sum(rv<T, R, group_vl>& v, const rt<T, R, C, row_l>& s) {
  detail::row_reduce<detail::sum_reduce>(v, s, static_cast<const rv<T, R, group_vl>*>(nullptr));
}
template <class T, int R, int C>
__device__ __forceinline__ void row_sum(rv<T, R, group_vl>& v, const rt<T, R, C, row_l>& s,
                                        const rv<T, R, group_vl>& prev) {
  detail::row_reduce<detail::sum_reduce>(v, s, &prev);
}

// v = max (sum) of each column of s; with `prev` as for the rows.
template <class T, int R, int C>
__device__ __forceinline__ void col_max(rv<T, C, quad_vl>& v, const rt<T, R, C, row_l>& s) {
  detail::col_reduce<detail::max_reduce>(v, s, static_cast<const rv<T, C, quad_vl>*>(nullptr));
}
template <class T, int R, int C>
__device__ __forceinline__ void col_max(rv<T, C, quad_vl>& v, const rt<T, R, C, row_l>& s,
                                        const rv<T, C, quad_vl>& prev) {
  detail::col_reduce<detail::max_reduce>(v, s, &prev);
}
template <class T, int R, int C>
__device__ __forceinline__ void col_sum(rv<T, C, quad_vl>& v, const rt<T, R, C, row_l>& s) {
  detail::col_reduce<detail::sum_reduce>(v, s, static_cast<const rv<T, C, quad_vl>*>(nullptr));
}
template <class T, int R, int C>
__device__ __forceinline__ void col_sum(rv<T, C, quad_vl>& v, const rt<T, R, C, row_l>& s,
                                        const rv<T, C, quad_vl>& prev) {
  detail::col_reduce<detail::sum_reduce>(v, s, &prev);
}

// d = s op v, v broadcast along each row (xxx_row: one value per row) or column (xxx_col).
#define TK_WARP_BROADCAST(name)                                                                         \
  template <class T, int R, int C>                                                                      \
  __device__ __forceinline__ void name##_row(rt<T, R, C, row_l>& d, const rt<T, R, C, row_l>& s,        \
                                             const rv<T, R, group_vl>& v) {                             \
    detail::row_broadcast<detail::name##_op>(d, s, v);                                                  \
  }                                                                                                     \
  template <class T, int R, int C>                                                                      \
  __device__ __forceinline__ void name##_col(rt<T, R, C, row_l>& d, const rt<T, R, C, row_l>& s,        \
                                             const rv<T, C, quad_vl>& v) {                              \
    detail::col_broadcast<detail::name##_op>(d, s, v);                                                  \
  }
TK_WARP_BROADCAST(add)
TK_WARP_BROADCAST(sub)
TK_WARP_BROADCAST(mul)
TK_WARP_BROADCAST(div)
#undef TK_WARP_BROADCAST

}  // namespace tk::warp
