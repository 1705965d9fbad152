#include "probes/smem-latency/smem_latency_kernels.hpp"
#include "src/errors.hpp"

namespace tkprobe::smem_latency {
namespace {

__device__ __forceinline__ std::uint32_t load_shared(std::uint32_t addr) {
  std::uint32_t value;
  asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(value) : "r"(addr));
  return value;
}

// One dependent step. Precomputed: the loaded word is the next shared address, so every load
// waits only for the one before. Indexed: the word is an index that must be scaled and added
// to the base first, as in `j = a[j]`.
template <Addressing Mode>
__device__ __forceinline__ std::uint32_t chase_step(std::uint32_t at, std::uint32_t base) {
  if constexpr (Mode == Addressing::precomputed) {
    return load_shared(at);
  } else {
    return load_shared(base + 4u * at);
  }
}

// One loop shape for every length (no unroll-and-remainder variants), so the cycles grow
// exactly linearly with the loads and the slope is the latency.
template <Addressing Mode>
__device__ __forceinline__ std::uint32_t chase_loads(std::uint32_t at, std::uint32_t base, int loads) {
#pragma unroll 1
  for (int i = 0; i < loads; i += kUnroll) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) at = chase_step<Mode>(at, base);
  }
  return at;
}

template <Addressing Mode>
__global__ void chase_kernel(Chase chase, Outputs out) {
  extern __shared__ std::uint32_t chain[];
  const auto base = static_cast<std::uint32_t>(__cvta_generic_to_shared(chain));
  for (int i = threadIdx.x; i < chase.words; i += blockDim.x) {
    chain[i] = Mode == Addressing::precomputed ? base + 4u * chase.next[i] : chase.next[i];
  }
  __syncthreads();
  if (threadIdx.x != 0) return;

  std::uint32_t at = Mode == Addressing::precomputed ? base : 0u;
  at = chase_loads<Mode>(at, base, kUnroll);  // warm-up: the loop's code into the i-cache
  const ClockStamp begin = clock_stamp();
  at = chase_loads<Mode>(at, base, chase.loads);
  const ClockStamp end = clock_stamp();
  *out.cycles = end.cycles - begin.cycles;
  *out.clock = ClockWindow{begin, end};
  *out.sink = at;
}

template <Addressing Mode>
void launch(const Chase& chase, const Outputs& out, cudaStream_t stream) {
  const int smem = chase.words * 4;
  TK_CUDA(cudaFuncSetAttribute(chase_kernel<Mode>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  chase_kernel<Mode><<<1, 128, smem, stream>>>(chase, out);
  TK_CUDA(cudaGetLastError());
}

}  // namespace

void launch_chase(Addressing addressing, const Chase& chase, const Outputs& out, cudaStream_t stream) {
  if (addressing == Addressing::precomputed) {
    launch<Addressing::precomputed>(chase, out, stream);
  } else {
    launch<Addressing::indexed>(chase, out, stream);
  }
}

}  // namespace tkprobe::smem_latency
