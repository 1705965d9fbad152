#pragma once
// Fused row operations for the online softmax, where the unfused chain (mul, sub_row, exp2)
// would cost the kernel more ALU instructions per score than it can hide under the tensor cores
// (at head dim 64 a score's softmax and its two mma shares take about as long).
#include "tk/arch/fast_math.cuh"
#include "tk/ops/warp/elementwise.cuh"
#include "tk/ops/warp/reductions.cuh"
#include "tk/types/rt.cuh"

namespace tk::warp {

namespace detail {
// 2^(scale x - v): one FFMA and one MUFU.EX2 (ex2.approx.ftz: results below 2^-126 become 0,
// which a softmax sum cannot see).
struct exp2_affine_op {
  float scale;
  __device__ float2 apply(float2 x, float2 v) const {
    return {arch::exp2_ftz(fmaf(scale, x.x, -v.x)), arch::exp2_ftz(fmaf(scale, x.y, -v.y))};
  }
};
}  // namespace detail

// d(r, c) = 2^(scale s(r, c) - v(r)) on float tiles. d may be s.
template <int R, int C, class L>
__device__ __forceinline__ void exp2_row(rt<float, R, C, L>& d, const rt<float, R, C, L>& s, float scale,
                                         const typename rt<float, R, C, L>::row_vec& v) {
  detail::broadcast<layout::Axis::row>(d, s, v, detail::exp2_affine_op{scale});
}

// d(r, c) = 2^(scale s(r, c) - v(c)): exp2_row along the other axis. The attention backward's
// transposed scores S^T (keys down, queries across) take each query's logsumexp this way.
template <int R, int C, class L>
__device__ __forceinline__ void exp2_col(rt<float, R, C, L>& d, const rt<float, R, C, L>& s, float scale,
                                         const typename rt<float, R, C, L>::col_vec& v) {
  detail::broadcast<layout::Axis::col>(d, s, v, detail::exp2_affine_op{scale});
}

// One key tile of FlashAttention's online softmax, in base 2. s holds raw scores (-inf where
// masked); m, the running row max of the raw scores, and l, the running row sum of exponentials
// in parts (warp::row_sum_part: sum_row_parts gives the sums, once, after the last tile), take
// the tile in; s becomes 2^(scale s - scale m) and `rescale` 2^(scale (m_before - m)), the factor
// whatever was summed before (l's old part, an output accumulator) must take. Each row needs a
// finite score in its first tile (m starts at -inf: rescale is then 0).
template <int R, int C>
__device__ __forceinline__ void online_softmax(rt<float, R, C, row_l>& s, rv<float, R, group_vl>& m,
                                               rv<float, R, group_vl>& l, rv<float, R, group_vl>& rescale,
                                               float scale) {
  rv<float, R, group_vl> m_before, shift;
  copy(m_before, m);
  row_max(m, s, m);
  mul(shift, m, scale);
  exp2_row(s, s, scale, shift);
  // 2^(scale m_before - shift): exp2_row's FFMA and MUFU on the vector (in [0, 1]: .ftz loses nothing)
  const detail::exp2_affine_op shifted_exp2{scale};
#pragma unroll
  for (int k = 0; k < rescale.pairs; ++k) rescale.data[k] = shifted_exp2.apply(m_before.data[k], shift.data[k]);
  mul(l, l, rescale);
  row_sum_part(l, s, l);
}

}  // namespace tk::warp
