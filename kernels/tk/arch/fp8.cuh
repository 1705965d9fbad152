#pragma once
// fp8 (e4m3) conversion: cvt.rn.satfinite.e4m3x2.f32 d, a, b (PTX ISA 9.7.9.21 "cvt") rounds two
// floats to nearest, saturating to the largest finite e4m3 (448) instead of making NaN, and packs
// them into 16 bits: a in the upper byte, b in the lower (cuda_fp8.hpp's __nv_cvt_float2_to_fp8
// passes its .y as a and .x as b). sm_89 and newer.
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

}  // namespace tk::arch
