#pragma once
// The mma.sync throughput kernel (mma_sync_kernels.hpp says what it computes), a template over the
// type and the ILP, for the files that instantiate it: mma_sync_kernels.cu (every architecture) and
// mma_sync_kernels_e4m3.cu (e4m3, sm_90a alone).
#include <utility>

#include "probes/timed_kernels/mma_sync_kernels.hpp"
#include "tk/arch/mma_sync.cuh"

namespace tkprobe::tensor::mma_sync_detail {

template <class Types, int Ilp>
__global__ void mma_sync_kernel(MmaSyncParams p) {
  using Op = tk::arch::MmaSync<Types>;
  const int lane = threadIdx.x % 32;
  std::uint32_t a[2][kMmaARegs], b[Ilp][kMmaBRegs];
#pragma unroll
  for (int sign = 0; sign < 2; ++sign)
#pragma unroll
    for (int r = 0; r < kMmaARegs; ++r) a[sign][r] = p.a_fragments[(sign * 32 + lane) * kMmaARegs + r];
#pragma unroll
  for (int i = 0; i < Ilp; ++i)
#pragma unroll
    for (int r = 0; r < kMmaBRegs; ++r) b[i][r] = p.b_fragments[(i * 32 + lane) * kMmaBRegs + r];
  typename Types::Reg d[Ilp][kMmaAccRegs] = {};
  const auto pass = [&](int sign) {
#pragma unroll
    for (int i = 0; i < Ilp; ++i) Op::mma(d[i], a[sign], b[i]);
  };
  const ClockStamp start = clock_stamp();
  for (long long pair = 0; pair < p.pairs; ++pair) {
    pass(0);
    pass(1);
  }
  pass(0);
  // Every warp's last result is read, so none of its mma can be dropped as dead code.
  std::uint32_t live = 0;
#pragma unroll
  for (int i = 0; i < Ilp; ++i)
#pragma unroll
    for (int r = 0; r < kMmaAccRegs; ++r) live ^= reinterpret_cast<const std::uint32_t&>(d[i][r]);
  __syncwarp();
  const ClockStamp end = clock_stamp();
  record_span(p.spans, start, end);
  if (blockIdx.x != 0 || threadIdx.x >= 32) {
    if (live == 0x9e3779b9u) p.out[0] = live;  // practically never; keeps `live` used
    return;
  }
  if (threadIdx.x == 0) *p.clock = ClockWindow{start, end};
#pragma unroll
  for (int i = 0; i < Ilp; ++i)
#pragma unroll
    for (int r = 0; r < kMmaAccRegs; ++r) {
      p.out[(i * 32 + lane) * kMmaAccRegs + r] = reinterpret_cast<const std::uint32_t&>(d[i][r]);
    }
}

// The kernel of `Types` with `ilp` accumulators, nullptr for an ILP outside 1..kMaxIlp.
template <class Types, int... I>
const void* pick(int ilp, std::integer_sequence<int, I...>) {
  const void* kernel = nullptr;
  ((ilp == I + 1 ? (kernel = reinterpret_cast<const void*>(&mma_sync_kernel<Types, I + 1>)) : nullptr), ...);
  return kernel;
}

template <class Types>
const void* pick(int ilp) {
  return pick<Types>(ilp, std::make_integer_sequence<int, kMaxIlp>{});
}

}  // namespace tkprobe::tensor::mma_sync_detail
