// wgmma kernels for e5m2 inputs.
#include "probes/timed_kernels/wgmma_kernels.cuh"

namespace tkprobe::tensor {

const void* wgmma_kernel_e5m2(const WgmmaVariant& v) {
  if (v.acc == Acc::f16) return pick_wgmma_kernel<tk::arch::e5m2_f16>(v.n, v.a, AllN{});
  return pick_wgmma_kernel<tk::arch::e5m2_f32>(v.n, v.a, AllN{});
}

}  // namespace tkprobe::tensor
