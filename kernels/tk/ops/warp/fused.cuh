#pragma once
// Fused row operations for the online softmax, where the unfused chain (mul, sub_row, exp2)
// would cost the kernel more ALU instructions per score than it can hide under the tensor cores
// (at head dim 64 a score's softmax and its two mma shares take about as long).
#include "tk/arch/fast_math.cuh"
#include "tk/types/rt.cuh"

namespace tk::warp {

// d(r, c) = 2^(scale s(r, c) - v(r)): one FFMA and one MUFU.EX2 per element (ex2.approx.ftz:
// results below 2^-126 become 0, which a softmax sum cannot see). d may be s.
template <int R, int C>
__device__ __forceinline__ void exp2_row(rt<float, R, C, row_l>& d, const rt<float, R, C, row_l>& s, float scale,
                                         const rv<float, R, group_vl>& v) {
  using RT = rt<float, R, C, row_l>;
#pragma unroll
  for (int i = 0; i < RT::subtile_rows; ++i)
#pragma unroll
    for (int j = 0; j < RT::subtile_cols; ++j)
#pragma unroll
      for (int p = 0; p < layout::kPairsPerSubtile; ++p) {
        const float shift = p % 2 == 0 ? v.data[i].x : v.data[i].y;  // row g, or g + 8 (rt_layout.hpp)
        const float2 x = s.at(i, j, p);
        d.at(i, j, p) = {arch::exp2_ftz(fmaf(scale, x.x, -shift)), arch::exp2_ftz(fmaf(scale, x.y, -shift))};
      }
}

}  // namespace tk::warp
