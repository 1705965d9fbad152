// wgmma kernels for e4m3 inputs.
#include "probes/timed_kernels/wgmma_kernels.cuh"

namespace tkprobe::tensor {

const void* wgmma_kernel_e4m3(const WgmmaVariant& v) {
  if (v.acc == Acc::f16) return pick_wgmma_kernel<tk::arch::e4m3_f16>(v.n, v.a, AllN{});
  return pick_wgmma_kernel<tk::arch::e4m3_f32>(v.n, v.a, AllN{});
}

}  // namespace tkprobe::tensor
