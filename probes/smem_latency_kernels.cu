#include "probes/smem_latency_kernels.hpp"

#include "src/errors.hpp"

namespace tkprobe::smem_latency {
namespace {

// One dependent load: the loaded word is the shared address of the next one, so no address
// arithmetic sits between loads and every load waits for the one before (load-to-use latency).
__device__ __forceinline__ std::uint32_t chase_step(std::uint32_t addr) {
  std::uint32_t next;
  asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(next) : "r"(addr));
  return next;
}

__global__ void chase_kernel(Chase chase, Outputs out) {
  extern __shared__ std::uint32_t chain[];
  const auto base = static_cast<std::uint32_t>(__cvta_generic_to_shared(chain));
  for (int i = threadIdx.x; i < chase.words; i += blockDim.x) chain[i] = base + 4u * chase.next[i];
  __syncthreads();
  if (threadIdx.x != 0) return;

  std::uint32_t addr = base;
  const ClockStamp begin = clock_stamp();
  for (int l = 0; l < chase.n_lengths; ++l) {
    const int loads = chase.lengths[l];  // read before the clock starts
    const std::uint64_t start = sm_cycles();
    for (int i = 0; i < loads; i += kUnroll) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) addr = chase_step(addr);
    }
    out.cycles[l] = sm_cycles() - start;
  }
  *out.clock = ClockWindow{begin, clock_stamp()};
  *out.sink = addr;
}

}  // namespace

void launch_chase(const Chase& chase, const Outputs& out, cudaStream_t stream) {
  const int smem = chase.words * 4;
  TK_CUDA(cudaFuncSetAttribute(chase_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  chase_kernel<<<1, 128, smem, stream>>>(chase, out);
  TK_CUDA(cudaGetLastError());
}

}  // namespace tkprobe::smem_latency
