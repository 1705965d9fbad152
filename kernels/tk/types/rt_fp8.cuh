#pragma once
// rt_e4m3<C>: a warp's 16 x C tile of e4m3 values held as wgmma's A operand from registers (K = 32
// per instruction for 8-bit inputs): four 32-bit registers per 32 columns, four values each, laid
// out as the PTX ISA's k32 A fragment (tk/layout/fragments.hpp, a_fragment with 1-byte elements).
// Its columns are the source tile's permuted within each 32 (layout::p8_key): filled from a float
// accumulator tile by warp::copy_e4m3 without moving values between threads, it multiplies a B
// operand whose K index is stored with the same permutation (the attention forward's V^T).
#include <cuda_fp8.h>

#include <cstdint>

#include "tk/types/rt.cuh"

namespace tk {

template <int C>
struct rt_e4m3 {
  static_assert(C > 0 && C % 32 == 0, "rt_e4m3<C>: C must be a positive multiple of 32 (wgmma's K for 8-bit inputs)");
  using element = __nv_fp8_e4m3;
  using tile_layout = row_l;  // rows split as a row_l tile's: g and g + 8
  static constexpr int rows = 16, cols = C;
  static constexpr bool row_major = true;
  static constexpr int slices = C / 32;

  std::uint32_t data[slices][4];
};

}  // namespace tk
