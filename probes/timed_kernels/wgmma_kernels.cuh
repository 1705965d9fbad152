#pragma once
// The wgmma throughput kernel, instantiated per input type in wgmma_kernels_<type>.cu.
#include <utility>

#include "probes/timed_kernels/wgmma_kernels.hpp"
#include "tk/arch/shared_memory.cuh"
#include "tk/arch/wgmma.cuh"
#include "tk/layout/wgmma_descriptor.hpp"

namespace tkprobe::tensor {

using tk::arch::shared_address;

// Copies the image in and makes it visible to the tensor cores, which read shared memory
// through the async proxy (PTX ISA 9.7.12.15 "fence.proxy").
__device__ __forceinline__ std::uint32_t load_image(const WgmmaParams& p, int bytes) {
  extern __shared__ std::uint8_t smem_raw[];
  const std::uint32_t raw = shared_address(smem_raw);
  std::uint8_t* base = smem_raw + ((kSwizzleAtomBytes - raw % kSwizzleAtomBytes) % kSwizzleAtomBytes);
  for (int i = threadIdx.x; i < bytes / 16; i += blockDim.x) {
    reinterpret_cast<uint4*>(base)[i] = reinterpret_cast<const uint4*>(p.image)[i];
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  return shared_address(base);
}

// `K` filler instructions of kind `F`. Volatile asm keeps each one, in order, between the wgmma
// around it; the values do not matter (they may overflow to inf, which costs the same), but they
// must be used, or ptxas deletes them (keep_filler_live).
template <Filler F, int K>
__device__ __forceinline__ void issue_filler(float (&x)[kFillerChains]) {
  if constexpr (F != Filler::none) {
#pragma unroll
    for (int i = 0; i < K; ++i) {
      float& v = x[i % kFillerChains];
      if constexpr (F == Filler::fma) {
        asm volatile("fma.rn.f32 %0, %0, %0, %0;" : "+f"(v));
      } else {
        asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(v));
      }
    }
  }
}

// A store no run takes (no arithmetic here yields this NaN payload) that depends on every filler
// register, so ptxas must compute them all.
template <Filler F>
__device__ __forceinline__ void keep_filler_live(const float (&x)[kFillerChains], std::uint32_t* out) {
  if constexpr (F != Filler::none) {
    float sum = 0;
#pragma unroll
    for (int i = 0; i < kFillerChains; ++i) sum += x[i];
    if (__float_as_uint(sum) == kUnreachableNan) out[threadIdx.x] = 0;
  }
}

template <class Types, int N, ASource A, Filler F = Filler::none, int K = 0>
__global__ void __launch_bounds__(kWarpgroupThreads, 1) wgmma_kernel(WgmmaParams p) {
  using Op = tk::arch::Wgmma<Types, N>;
  constexpr int kRegs = tk::arch::kAccRegs<Types, N>;
  constexpr std::uint64_t kSliceStep = kRowBytesPerK >> 4;  // descriptor units per K slice
  const auto descriptor = [](std::uint32_t address) {
    return tk::layout::wgmma_descriptor(address, 16, kSwizzleAtomBytes, tk::layout::Swizzle::b128);
  };
  const std::uint32_t base = load_image(p, wgmma_image_bytes(N));
  const std::uint64_t desc_a[2] = {descriptor(base + kAPlusOffset), descriptor(base + kAMinusOffset)};
  const std::uint64_t desc_b = descriptor(base + kBOffset);
  std::uint32_t a[2][kKSlices][kAFragmentRegs];
  if constexpr (A == ASource::reg) {
#pragma unroll
    for (int sign = 0; sign < 2; ++sign)
#pragma unroll
      for (int s = 0; s < kKSlices; ++s)
#pragma unroll
        for (int r = 0; r < kAFragmentRegs; ++r)
          a[sign][s][r] = p.a_fragments[((sign * kKSlices + s) * kWarpgroupThreads + threadIdx.x) * kAFragmentRegs + r];
  }
  typename Types::Reg d[kRegs] = {};
  float filler[kFillerChains];
#pragma unroll
  for (int i = 0; i < kFillerChains; ++i) filler[i] = float(threadIdx.x + i);
  // One pass: the whole 128-byte K tile, as four wgmma of 32 bytes of K each.
  const auto pass = [&](int sign) {
#pragma unroll
    for (int s = 0; s < kKSlices; ++s) {
      if constexpr (A == ASource::reg) {
        Op::rs(d, a[sign][s], desc_b + s * kSliceStep, 1);
      } else {
        Op::ss(d, desc_a[sign] + s * kSliceStep, desc_b + s * kSliceStep, 1);
      }
      issue_filler<F, K>(filler);
    }
  };
  tk::arch::wgmma_fence();
  const ClockStamp start = clock_stamp();
  // The first pass sits outside the loop, so the loop's accumulators always come from wgmma
  // and ptxas need not fence (WARPGROUP.ARRIVE) on every trip.
  pass(0);
  tk::arch::wgmma_commit();
#pragma unroll kPairUnroll
  for (long long pair = 0; pair < p.pairs; ++pair) {
    pass(1);
    pass(0);
    tk::arch::wgmma_commit();
  }
  tk::arch::wgmma_wait<0>();
  const ClockStamp end = clock_stamp();
  keep_filler_live<F>(filler, p.out);
  record_span(p.spans, start, end);
  if (blockIdx.x != 0) return;
  if (threadIdx.x == 0) *p.clock = ClockWindow{start, end};
#pragma unroll
  for (int r = 0; r < kRegs; ++r) {
    p.out[threadIdx.x * kRegs + r] = reinterpret_cast<const std::uint32_t&>(d[r]);
  }
}

// The kernel for (Types, n, a) among Ns, the N values the ISA allows for Types.
template <class Types, int... Ns>
const void* pick_wgmma_kernel(int n, ASource a, std::integer_sequence<int, Ns...>) {
  const void* kernel = nullptr;
  ((n == Ns ? (kernel = a == ASource::reg ? reinterpret_cast<const void*>(&wgmma_kernel<Types, Ns, ASource::reg>)
                                          : reinterpret_cast<const void*>(&wgmma_kernel<Types, Ns, ASource::smem>))
            : nullptr),
   ...);
  return kernel;
}

// N = 8, 16, ..., 256 and the subset s8 allows.
template <int... I>
constexpr auto every_n(std::integer_sequence<int, I...>) {
  return std::integer_sequence<int, 8 * (I + 1)...>{};
}
using AllN = decltype(every_n(std::make_integer_sequence<int, 32>{}));
using S8N = std::integer_sequence<int, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256>;

}  // namespace tkprobe::tensor
