#include "probes/mem-latency/mem_latency_kernels.hpp"
#include "src/errors.hpp"

namespace tkprobe::mem_latency {
namespace {

// Cached in L1 and L2 (.ca); volatile so ptxas keeps every load in place.
__device__ __forceinline__ const std::uint64_t* follow(const std::uint64_t* p) {
  std::uint64_t next;
  asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(next) : "l"(p));
  return reinterpret_cast<const std::uint64_t*>(next);
}

__device__ __forceinline__ const std::uint64_t* chase(const std::uint64_t* p, long long steps) {
#pragma unroll 1
  for (long long i = 0; i < steps; i += kUnroll) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) p = follow(p);
  }
  return p;
}

__global__ void link_kernel(std::uint64_t* buffer, const std::uint32_t* next, std::uint32_t lines) {
  for (std::uint32_t l = blockIdx.x * blockDim.x + threadIdx.x; l < lines; l += gridDim.x * blockDim.x) {
    buffer[std::uint64_t(l) * kLineWords] = reinterpret_cast<std::uint64_t>(buffer + std::uint64_t(next[l]) * kLineWords);
  }
}

__global__ void chase_kernel(const std::uint64_t* buffer, long long warm_steps, long long steps, ChaseOut out) {
  const std::uint64_t* p = chase(buffer, warm_steps);
  const ClockStamp start = clock_stamp();
  p = chase(p, steps);
  const ClockStamp end = clock_stamp();
  *out.cycles = end.cycles - start.cycles;
  *out.clock = ClockWindow{start, end};
  *out.sink = reinterpret_cast<std::uint64_t>(p);
}

}  // namespace

void link(std::uint64_t* buffer, const std::uint32_t* next, std::uint32_t lines, cudaStream_t stream) {
  link_kernel<<<1024, 256, 0, stream>>>(buffer, next, lines);
  TK_CUDA(cudaGetLastError());
}

void launch_chase(const std::uint64_t* buffer, long long warm_steps, long long steps, const ChaseOut& out,
                  cudaStream_t stream) {
  chase_kernel<<<1, 1, 0, stream>>>(buffer, warm_steps, steps, out);
}

}  // namespace tkprobe::mem_latency
