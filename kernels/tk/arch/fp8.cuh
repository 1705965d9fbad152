#pragma once
// fp8 (e4m3) conversion: cvt.rn.satfinite.e4m3x2.f32 d, a, b (PTX ISA 9.7.9.21 "cvt") rounds two
// floats to nearest, saturating to the largest finite e4m3 (448) instead of making NaN, and packs
// them into 16 bits: a in the upper byte, b in the lower (cuda_fp8.hpp's __nv_cvt_float2_to_fp8
// passes its .y as a and .x as b). sm_89 and newer. The other way, e4m3 to f16, is exact: every
// e4m3 value is an f16.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace tk::arch {

// {lo, hi} as two e4m3 bytes: lo in bits 0..7, hi in bits 8..15.
__device__ __forceinline__ std::uint32_t e4m3x2(float lo, float hi) {
  std::uint16_t d;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
}

// Four floats as four e4m3 bytes of one register, b0 lowest: two cvt and one byte permute (PRMT).
__device__ __forceinline__ std::uint32_t e4m3x4(float b0, float b1, float b2, float b3) {
  std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, 0x5410;" : "=r"(d) : "r"(e4m3x2(b0, b1)), "r"(e4m3x2(b2, b3)));
  return d;
}

// Two e4m3 bytes (lo in bits 0..7) as two halves, lo in .x: one cvt.rn.f16x2.e4m3x2 from sm_89,
// cuda_fp8.h's bit moves before (sm_80's image, and its PTX compiled for a newer GPU).
__device__ __forceinline__ __half2 half2_of_e4m3x2(std::uint16_t two) {
  return __half2(__nv_cvt_fp8x2_to_halfraw2(two, __NV_E4M3));
}

}  // namespace tk::arch
