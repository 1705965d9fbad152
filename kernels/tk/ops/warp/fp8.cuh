#pragma once
// Float tiles to e4m3 A operands (tk/types/rt_fp8.cuh).
//
//   warp::copy_e4m3(p8, s, 256.0f);   // p8 = e4m3(256 s), key columns permuted per 32
#include "tk/arch/fp8.cuh"
#include "tk/layout/fragments.hpp"
#include "tk/types/rt.cuh"
#include "tk/types/rt_fp8.cuh"

namespace tk::warp {

// d = e4m3(scale x s), rounded to nearest and saturated at 448: s is a warp's 16 x C float tile in
// wgmma's accumulator order (value v of the tile's registers is accumulator value v), d its A
// operand with columns permuted by layout::p8_key. Each byte comes from the thread's own registers
// (layout::p8_source): C / 2 multiplies, C / 4 cvt.e4m3x2 and C / 8 byte permutes per thread.
template <int C>
__device__ __forceinline__ void copy_e4m3(rt_e4m3<C>& d, const rt<float, 16, C, row_l>& s, float scale) {
  const float* v = reinterpret_cast<const float*>(s.data);
#pragma unroll
  for (int k = 0; k < C / 32; ++k)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const float* f = v + 16 * k;
      d.data[k][r] = arch::e4m3x4(scale * f[layout::p8_source(r, 0)], scale * f[layout::p8_source(r, 1)],
                                  scale * f[layout::p8_source(r, 2)], scale * f[layout::p8_source(r, 3)]);
    }
}

}  // namespace tk::warp
