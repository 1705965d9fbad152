#include "probes/timed_kernels/smem_banks_kernels.hpp"
#include "tk/arch/shared_memory.cuh"
#include "src/errors.hpp"

namespace tkprobe::smem_banks {
namespace {

using tk::arch::shared_address;

// A value no load produces in practice; comparing with it keeps every load's result live
// and makes the final barrier wait for the last load.
constexpr std::uint32_t kNever = 0x9e3779b9u;

// Volatile: ptxas may not merge or hoist repeated loads of the same address.
template <int Width>
__device__ __forceinline__ std::uint32_t load_volatile(std::uint32_t addr) {
  std::uint32_t a, b, c, d;
  if constexpr (Width == 4) {
    asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(a) : "r"(addr));
    return a;
  } else if constexpr (Width == 8) {
    asm volatile("ld.volatile.shared.v2.u32 {%0, %1}, [%2];" : "=r"(a), "=r"(b) : "r"(addr));
    return a ^ b;
  } else {
    asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(addr));
    return a ^ b ^ c ^ d;
  }
}

__device__ __forceinline__ std::uint32_t ldmatrix_x4(std::uint32_t addr) {
  std::uint32_t a, b, c, d;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
               : "r"(addr));
  return a ^ b ^ c ^ d;
}

// Non-zero, position-dependent contents: never measure on zeros.
__device__ void fill(std::uint32_t* words, int count) {
  for (int i = threadIdx.x; i < count; i += blockDim.x) words[i] = (i + 1) * 2654435761u;
  __syncthreads();
}

__device__ void finish(std::uint32_t acc, ClockStamp start, const Outputs& out) {
  if (acc == kNever) out.sink[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    const ClockStamp end = clock_stamp();
    out.block_cycles[blockIdx.x] = end.cycles - start.cycles;
    if (blockIdx.x == 0) *out.clock = ClockWindow{start, end};
  }
}

template <int Width>
__global__ void strided_kernel(int stride, int trips, Outputs out) {
  extern __shared__ std::uint32_t smem[];
  fill(smem, strided_smem_bytes(Width, stride) / 4);
  const std::uint32_t addr = shared_address(smem) + (threadIdx.x % 32) * stride * Width;
  const ClockStamp start = clock_stamp();
  std::uint32_t acc = 0;
  for (int trip = 0; trip < trips; ++trip) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc ^= load_volatile<Width>(addr);
  }
  finish(acc, start, out);
}

// ldmatrix has no volatile form, so each unrolled load reads its own copy of the tile, and
// the copies' base moves by a run-time step (0 in practice) that ptxas cannot prove constant:
// no load is merged with another or hoisted out of the loop.
template <tk::layout::Swizzle Mode>
__global__ void ldmatrix_kernel(int trips, std::uint32_t step, Outputs out) {
  extern __shared__ std::uint32_t smem[];
  constexpr std::uint32_t kSpan = kTileCopies * kTileBytes;
  fill(smem, 2 * kSpan / 4);
  const std::uint32_t lane_addr = shared_address(smem) + ldmatrix_lane_offset(threadIdx.x % 32, Mode);
  const ClockStamp start = clock_stamp();
  std::uint32_t acc = 0, base = 0;
  for (int trip = 0; trip < trips; ++trip) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc ^= ldmatrix_x4(lane_addr + base + u * kTileBytes);
    base = (base + step) & (kSpan - 1);
  }
  finish(acc, start, out);
}

dim3 block_of(const Launch& l) { return dim3(32 * l.warps_per_block); }

}  // namespace

void launch_strided(int width, int stride, const Launch& l, const Outputs& out, cudaStream_t stream) {
  const int smem = strided_smem_bytes(width, stride);
  switch (width) {
    case 4:
      strided_kernel<4><<<l.blocks, block_of(l), smem, stream>>>(stride, l.trips, out);
      break;
    case 8:
      strided_kernel<8><<<l.blocks, block_of(l), smem, stream>>>(stride, l.trips, out);
      break;
    case 16:
      strided_kernel<16><<<l.blocks, block_of(l), smem, stream>>>(stride, l.trips, out);
      break;
    default:
      throw UsageError("access width must be 4, 8 or 16 bytes");
  }
  TK_CUDA(cudaGetLastError());
}

void launch_ldmatrix(tk::layout::Swizzle mode, const Launch& l, const Outputs& out, cudaStream_t stream) {
  const int smem = 2 * kTileCopies * kTileBytes;
  using tk::layout::Swizzle;
  if (mode == Swizzle::none) {
    ldmatrix_kernel<Swizzle::none><<<l.blocks, block_of(l), smem, stream>>>(l.trips, 0u, out);
  } else {
    ldmatrix_kernel<Swizzle::b128><<<l.blocks, block_of(l), smem, stream>>>(l.trips, 0u, out);
  }
  TK_CUDA(cudaGetLastError());
}

}  // namespace tkprobe::smem_banks
