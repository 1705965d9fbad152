#pragma once
// The wgmma throughput kernel (probes/timed_kernels/wgmma_kernels.cuh) for bf16 m64n256k16 with A from
// shared memory, built once per filler kind and count: after each wgmma every thread issues that
// many FFMA or MUFU.EX2 on its own registers while the tensor cores work.
#include "probes/timed_kernels/wgmma_kernels.hpp"

namespace tkprobe::overlap {

// The filler counts per wgmma the probe sweeps (each a kernel of its own: the count is unrolled).
inline constexpr int kCounts[] = {1, 2, 4, 8, 16, 32, 64, 128};
inline constexpr int kWgmmaN = 256;

// The kernel for `count` (one of kCounts) instructions of `filler` after each wgmma; nullptr for
// another count.
const void* filler_kernel(tensor::Filler filler, int count);

}  // namespace tkprobe::overlap
