// wgmma kernels for tf32 and s8 inputs, and the dispatch over every type.
#include "probes/timed_kernels/wgmma_kernels.cuh"

namespace tkprobe::tensor {

const void* wgmma_kernel_16bit(const WgmmaVariant& v);
const void* wgmma_kernel_e4m3(const WgmmaVariant& v);
const void* wgmma_kernel_e5m2(const WgmmaVariant& v);

const void* wgmma_kernel(const WgmmaVariant& v) {
  if (!valid_acc(v.dtype, v.acc) || !valid_wgmma_n(v.dtype, v.n)) return nullptr;
  switch (v.dtype) {
    case DType::bf16:
    case DType::fp16:
      return wgmma_kernel_16bit(v);
    case DType::e4m3:
      return wgmma_kernel_e4m3(v);
    case DType::e5m2:
      return wgmma_kernel_e5m2(v);
    case DType::tf32:
      return pick_wgmma_kernel<tk::arch::tf32_f32>(v.n, v.a, AllN{});
    default:
      return pick_wgmma_kernel<tk::arch::s8_s32>(v.n, v.a, S8N{});
  }
}

}  // namespace tkprobe::tensor
