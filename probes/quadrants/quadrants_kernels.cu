#include "probes/quadrants/quadrants_kernels.hpp"

namespace tkprobe::quadrants {
namespace {

__device__ __forceinline__ std::uint32_t warp_slot() {
  std::uint32_t id;
  asm volatile("mov.u32 %0, %%warpid;" : "=r"(id));
  return id;
}

__global__ void fma_kernel_impl(Params p) {
  float x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = float(threadIdx.x + c);
  if (blockIdx.x == 0 && threadIdx.x % kLanes == 0) p.warp_slots[threadIdx.x / kLanes] = warp_slot();
  __syncthreads();  // every warp starts together, inside the window
  const ClockStamp start = clock_stamp();
  for (long long t = 0; t < p.trips; ++t) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) asm volatile("fma.rn.f32 %0, %0, %0, %0;" : "+f"(x[c]));
    }
  }
  __syncthreads();  // the window closes after the last warp's last FFMA
  const ClockStamp end = clock_stamp();
  if (blockIdx.x == 0 && threadIdx.x == 0) *p.clock = ClockWindow{start, end};
  float sum = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) sum += x[c];
  if (__float_as_uint(sum) == kUnreachableNan) p.sink[threadIdx.x] = 0;  // ptxas must keep every FFMA
}

}  // namespace

const void* fma_kernel() { return reinterpret_cast<const void*>(&fma_kernel_impl); }

}  // namespace tkprobe::quadrants
