#include "probes/tma-reduce/tma_reduce_kernels.hpp"

#include "src/errors.hpp"
#include "tk/arch/shared_memory.cuh"
#include "tk/arch/tma.cuh"

namespace tkprobe::tma_reduce {
namespace {

// One thread issues each pass's bulk reduction; the next pass may reuse the tile once the copy
// engine has read it (wait_group.read), and the kernel ends only when every write is performed.
__global__ void __launch_bounds__(kThreads) bulk_kernel(Launch l, float* dst) {
  __shared__ alignas(128) float tile[kTileFloats];
  for (int i = threadIdx.x; i < kTileFloats; i += kThreads) tile[i] = 1.0f;
  tk::arch::fence_proxy_async();  // the copy engine reads the tile through the async proxy
  __syncthreads();
  if (threadIdx.x != 0) return;
  float* target = dst + std::size_t(blockIdx.x % l.targets) * kTileFloats;
  const std::uint32_t src = tk::arch::shared_address(tile);
  for (int pass = 0; pass < l.passes; ++pass) {
    tk::arch::bulk_reduce_add_f32(target, src, kTileBytes);
    tk::arch::bulk_commit();
  }
  tk::arch::bulk_wait<0>();
}

// Every thread adds its share of the tile with one reduction per element, coalesced by warps.
__global__ void __launch_bounds__(kThreads) atomic_kernel(Launch l, float* dst) {
  float* target = dst + std::size_t(blockIdx.x % l.targets) * kTileFloats;
  for (int pass = 0; pass < l.passes; ++pass) {
    for (int i = threadIdx.x; i < kTileFloats; i += kThreads) atomicAdd(target + i, 1.0f);
  }
}

}  // namespace

void launch_reduce(Method m, const Launch& l, float* dst, cudaStream_t stream) {
  if (m == Method::bulk) {
    bulk_kernel<<<l.blocks, kThreads, 0, stream>>>(l, dst);
  } else {
    atomic_kernel<<<l.blocks, kThreads, 0, stream>>>(l, dst);
  }
  TK_CUDA(cudaGetLastError());
}

}  // namespace tkprobe::tma_reduce
