// wgmma kernels for bf16 and fp16 inputs (one file per type family keeps builds parallel).
#include "probes/timed_kernels/wgmma_kernels.cuh"

namespace tkprobe::tensor {

const void* wgmma_kernel_16bit(const WgmmaVariant& v) {
  if (v.dtype == DType::bf16) return pick_wgmma_kernel<tk::arch::bf16_f32>(v.n, v.a, AllN{});
  if (v.acc == Acc::f16) return pick_wgmma_kernel<tk::arch::f16_f16>(v.n, v.a, AllN{});
  return pick_wgmma_kernel<tk::arch::f16_f32>(v.n, v.a, AllN{});
}

}  // namespace tkprobe::tensor
