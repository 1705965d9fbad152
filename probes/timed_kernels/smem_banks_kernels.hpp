#pragma once
// Shared-memory load kernels (smem_banks_kernels.cu), shared by smem-banks and bandwidth's smem
// row. Every block is one SM's worth of warps hammering shared memory; thread 0 times the block
// with clock64().
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/tk/layout/swizzle.hpp"
#include "src/kernel_clock.cuh"

namespace tkprobe::smem_banks {

inline constexpr int kUnroll = 16;         // loads per loop trip (the SASS test expects this many)
inline constexpr int kTileRows = 8;        // ldmatrix case: eight rows...
inline constexpr int kTileRowBytes = 128;  // ...of 128 bytes (64 bf16), as a wgmma tile has
inline constexpr int kTileBytes = kTileRows * kTileRowBytes;
inline constexpr int kTileCopies = kUnroll;  // one tile per unrolled load, so no two loads are alike

struct Launch {
  int blocks;           // one per SM
  int warps_per_block;  // enough that the shared-memory pipe, not issue, is the limit
  int trips;            // loop trips; each warp issues trips * kUnroll loads
};

struct Outputs {
  std::uint64_t* block_cycles;  // [blocks]: SM cycles from the first load to the last result
  std::uint32_t* sink;          // keeps the loaded values live
  ClockWindow* clock;           // block 0's clock64 / globaltimer stamps
};

// Lane t of an ldmatrix.x4: matrix t/8 of a row of four 8x8 bf16 matrices, row t%8 of it.
constexpr std::uint32_t ldmatrix_lane_offset(int lane, tk::layout::Swizzle mode) {
  const int row = lane % kTileRows, matrix = lane / kTileRows;
  return tk::layout::swizzle(static_cast<std::uint32_t>(row * kTileRowBytes + matrix * 16), mode);
}

// Shared bytes the strided kernel touches: lane 31's element is the last.
constexpr int strided_smem_bytes(int width, int stride) { return (31 * stride + 1) * width; }

// Lane t reads `width`-byte element t*stride (ld.volatile.shared, so nothing is elided).
void launch_strided(int width, int stride, const Launch& launch, const Outputs& out, cudaStream_t stream);

// Each lane supplies one row address of an ldmatrix.x4 over the 8x128-byte tile.
void launch_ldmatrix(tk::layout::Swizzle mode, const Launch& launch, const Outputs& out, cudaStream_t stream);

}  // namespace tkprobe::smem_banks
