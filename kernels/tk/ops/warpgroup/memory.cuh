#pragma once
// Registers -> shared tiles -> global memory at warpgroup scope: a 64-row shared tile is the four
// warps' 16-row register tiles stacked (warp k holds rows 16k..16k+15), as the warpgroup's wgmma
// accumulator is. (The GEMM and attention epilogues use both, and their GPU tests check what they
// store.)
#include "tk/arch/tma.cuh"
#include "tk/ops/warp/memory.cuh"
#include "tk/ops/warpgroup/mma.cuh"
#include "tk/ops/warpgroup/tma.cuh"
#include "tk/sync/pipeline.cuh"

namespace tk::warpgroup {

inline constexpr int kWarpRows = kRows / 4;  // a warp's share of the 64 rows

__device__ __forceinline__ int warp_row() { return threadIdx.x % 128 / 32 * kWarpRows; }

template <class ST, class RT>
__device__ __forceinline__ void store(ST& d, const RT& s) {
  static_assert(ST::rows == kRows && RT::rows == kWarpRows, "warpgroup::store: 16-row tiles into a 64-row shared tile");
  warp::store(d, s, warp_row());
}

// The warps' 16-row tiles to tile (row_tile, col_tile) of matrix `depth` of a tensor, through the
// shared `staging` tile and the TMA: thread 0 waits until the copy engine has read the tile's last
// contents, the warps write theirs, and thread 0 issues the store once all have (named barrier
// `barrier`, 1..15, for this warpgroup alone). The warpgroup goes on at once; the tile must
// outlive the store (tma::store_wait_read in thread 0 before the block exits). `map` is a
// CUtensorMap or a tk::grid_map.
template <class ST, class RT, class Map>
__device__ __forceinline__ void store_async(const Map& map, ST& staging, const RT& src, int row_tile,
                                            int col_tile, int barrier, int depth = 0) {
  const bool issuer = thread() == 0;
  if (issuer) tma::store_wait_read<0>();
  sync(barrier);
  store(staging, src);
  arch::fence_proxy_async();
  sync(barrier);
  if (issuer) tma::store_async(map, staging, row_tile, col_tile, depth);
}

}  // namespace tk::warpgroup
