// The mma.sync throughput kernels of the types every architecture since sm_80 runs; e4m3's are in
// mma_sync_kernels_e4m3.cu, built for sm_90a alone.
#include "probes/timed_kernels/mma_sync_kernel.cuh"

namespace tkprobe::tensor {

using mma_sync_detail::pick;

Requirements mma_sync_needs(DType d) {
  return d == DType::e4m3 ? Requirements{.sm90a = {Sm90aFeature::sm90a_kernels}} : Requirements{};
}

const void* mma_sync_kernel(const MmaSyncVariant& v) {
  switch (v.dtype) {
    case DType::bf16:
      return pick<tk::arch::bf16_f32>(v.ilp);
    case DType::fp16:
      return pick<tk::arch::f16_f32>(v.ilp);
    case DType::tf32:
      return pick<tk::arch::tf32_f32>(v.ilp);
    case DType::e4m3:
      return mma_sync_e4m3_kernel(v.ilp);
    case DType::s8:
      return pick<tk::arch::s8_s32>(v.ilp);
    default:
      return nullptr;
  }
}

}  // namespace tkprobe::tensor
