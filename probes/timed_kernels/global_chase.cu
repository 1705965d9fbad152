#include "probes/timed_kernels/global_chase.hpp"
#include "src/errors.hpp"

namespace tkprobe::global_chase {
namespace {

// Volatile so ptxas keeps every load in place; the cache operator picks the path.
template <Path P>
__device__ __forceinline__ const std::uint64_t* follow(const std::uint64_t* p) {
  std::uint64_t next;
  if constexpr (P == Path::l1_and_l2) {
    asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(next) : "l"(p));
  } else {
    asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(next) : "l"(p));
  }
  return reinterpret_cast<const std::uint64_t*>(next);
}

template <Path P>
__device__ __forceinline__ const std::uint64_t* chase(const std::uint64_t* p, long long steps) {
#pragma unroll 1
  for (long long i = 0; i < steps; i += kUnroll) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) p = follow<P>(p);
  }
  return p;
}

__global__ void link_kernel(std::uint64_t* buffer, const std::uint32_t* next, std::uint32_t lines) {
  for (std::uint32_t l = blockIdx.x * blockDim.x + threadIdx.x; l < lines; l += gridDim.x * blockDim.x) {
    buffer[std::uint64_t(l) * kLineWords] = reinterpret_cast<std::uint64_t>(buffer + std::uint64_t(next[l]) * kLineWords);
  }
}

template <Path P>
__global__ void chase_kernel(const std::uint64_t* start, long long warm_steps, long long steps, ChaseOut out) {
  const std::uint64_t* p = chase<P>(start, warm_steps);
  const ClockStamp begin = clock_stamp();
  p = chase<P>(p, steps);
  const ClockStamp end = clock_stamp();
  *out.cycles = end.cycles - begin.cycles;
  *out.clock = ClockWindow{begin, end};
  *out.sink = reinterpret_cast<std::uint64_t>(p);
}

}  // namespace

void link(std::uint64_t* buffer, const std::uint32_t* next, std::uint32_t lines, cudaStream_t stream) {
  link_kernel<<<1024, 256, 0, stream>>>(buffer, next, lines);
  TK_CUDA(cudaGetLastError());
}

void launch_chase(Path path, const std::uint64_t* start, long long warm_steps, long long steps, const ChaseOut& out,
                  cudaStream_t stream) {
  if (path == Path::l1_and_l2) {
    chase_kernel<Path::l1_and_l2><<<1, 1, 0, stream>>>(start, warm_steps, steps, out);
  } else {
    chase_kernel<Path::l2_only><<<1, 1, 0, stream>>>(start, warm_steps, steps, out);
  }
}

}  // namespace tkprobe::global_chase
