#pragma once
// Registers -> shared tiles at warpgroup scope: a 64-row shared tile is the four warps' 16-row
// register tiles stacked (warp k holds rows 16k..16k+15), as the warpgroup's wgmma accumulator is.
// (The GEMM and attention epilogues use it, and their GPU tests check what it stores.)
#include "tk/ops/warp/memory.cuh"
#include "tk/ops/warpgroup/mma.cuh"

namespace tk::warpgroup {

inline constexpr int kWarpRows = kRows / 4;  // a warp's share of the 64 rows

__device__ __forceinline__ int warp_row() { return threadIdx.x % 128 / 32 * kWarpRows; }

template <class ST, class RT>
__device__ __forceinline__ void store(ST& d, const RT& s) {
  static_assert(ST::rows == kRows && RT::rows == kWarpRows, "warpgroup::store: 16-row tiles into a 64-row shared tile");
  warp::store(d, s, warp_row());
}

}  // namespace tk::warpgroup
