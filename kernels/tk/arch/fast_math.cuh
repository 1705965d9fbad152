#pragma once
// Single-instruction transcendental approximations (PTX ISA 9.7.4.x "ex2"): one MUFU.EX2 each,
// where exp2f adds range checks around it to keep denormal results.
namespace tk::arch {

// 2^x, flushing results below 2^-126 to 0 (.ftz); max relative error 2^-22 (PTX ISA, "ex2").
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace tk::arch
