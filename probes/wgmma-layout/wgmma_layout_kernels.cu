#include "probes/wgmma-layout/wgmma_layout_kernels.hpp"
#include "src/errors.hpp"
#include "tk/arch/mma_types.hpp"
#include "tk/arch/shared_memory.cuh"
#include "tk/arch/wgmma.cuh"

namespace tkprobe::wgmma_layout {
namespace {

using Mma = tk::arch::Wgmma<tk::arch::bf16_f32, kN>;
static_assert(tk::arch::kAccRegs<tk::arch::bf16_f32, kN> == kAccRegs);

__device__ void copy_in(std::uint8_t* dst, const std::uint8_t* src, int bytes) {
  for (int i = threadIdx.x; i < bytes / 16; i += blockDim.x) {
    reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
  }
}

// The start-address field holds address >> 4 in bits 0-13; both regions sit below 256 KiB.
__device__ std::uint64_t at_region(std::uint64_t desc, const std::uint8_t* region) {
  return desc + (tk::arch::shared_address(region) >> 4);
}

template <bool ARegisters, int Trans>
__global__ void __launch_bounds__(kThreads, 1) one_wgmma_kernel(Params p) {
  extern __shared__ std::uint8_t smem_raw[];
  const std::uint32_t raw = tk::arch::shared_address(smem_raw);
  std::uint8_t* a_region = smem_raw + (kRegionAlign - raw % kRegionAlign) % kRegionAlign;
  std::uint8_t* b_region = a_region + p.a_bytes;
  copy_in(a_region, p.a_image, p.a_bytes);
  copy_in(b_region, p.b_image, p.b_bytes);
  std::uint32_t a[kARegs] = {};
  if constexpr (ARegisters) {
    for (int r = 0; r < kARegs; ++r) a[r] = p.a_registers[threadIdx.x * kARegs + r];
  }
  // The tensor cores read shared memory through the async proxy (PTX ISA 9.7.12.15).
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  float d[kAccRegs] = {};
  tk::arch::wgmma_fence();
  if constexpr (ARegisters) {
    Mma::rs<Trans>(d, a, at_region(p.desc_b, b_region), 0);
  } else {
    Mma::ss<Trans, Trans>(d, at_region(p.desc_a, a_region), at_region(p.desc_b, b_region), 0);
  }
  tk::arch::wgmma_commit();
  tk::arch::wgmma_wait<0>();
  for (int r = 0; r < kAccRegs; ++r) p.out[threadIdx.x * kAccRegs + r] = d[r];
}

const void* kernel(Form f) {
  if (f.a_in_registers) {
    return f.mn_major ? reinterpret_cast<const void*>(&one_wgmma_kernel<true, 1>)
                      : reinterpret_cast<const void*>(&one_wgmma_kernel<true, 0>);
  }
  return f.mn_major ? reinterpret_cast<const void*>(&one_wgmma_kernel<false, 1>)
                    : reinterpret_cast<const void*>(&one_wgmma_kernel<false, 0>);
}

}  // namespace

void run(Form form, const Params& p, cudaStream_t stream) {
  const void* k = kernel(form);
  const int smem = smem_bytes(p.a_bytes, p.b_bytes);
  TK_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  Params copy = p;
  void* args[] = {&copy};
  TK_CUDA(cudaLaunchKernel(k, dim3(1), dim3(kThreads), args, smem, stream));
  TK_CUDA(cudaStreamSynchronize(stream));
}

}  // namespace tkprobe::wgmma_layout
