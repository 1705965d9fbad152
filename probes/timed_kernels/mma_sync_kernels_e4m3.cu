// mma.sync's e4m3 kernels: that form needs sm_89 or newer, so they are built for sm_90a alone.
#include "probes/timed_kernels/mma_sync_kernel.cuh"

namespace tkprobe::tensor {

const void* mma_sync_e4m3_kernel(int ilp) { return mma_sync_detail::pick<tk::arch::e4m3_f32>(ilp); }

}  // namespace tkprobe::tensor
