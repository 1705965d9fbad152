#pragma once
// Launchers for the mma.sync throughput kernel (mma_sync_kernels.cu), run through tensor_bench by
// mma-sync, tensor-cores and occupancy. Every warp keeps `ilp` independent accumulators, each
// multiplied by the same A and its own B, alternating A and -A as the wgmma kernel does, so the
// accumulators end holding exactly one product each.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "probes/measure/tensor_types.hpp"
#include "src/kernel_clock.cuh"
#include "src/requirements.hpp"

namespace tkprobe::tensor {

inline constexpr int kMaxIlp = 8;
inline constexpr int kMmaARegs = 4, kMmaBRegs = 2, kMmaAccRegs = 4;

struct MmaSyncVariant {
  DType dtype;
  int ilp;  // independent accumulators per warp, 1..kMaxIlp
};

struct MmaSyncParams {
  const std::uint32_t* a_fragments;  // [sign][lane][register]
  const std::uint32_t* b_fragments;  // [accumulator][lane][register]
  long long pairs;                   // (A*B, -A*B) pairs before the final A*B
  std::uint32_t* out;                // warp 0 of block 0: [accumulator][lane][register]
  ClockWindow* clock;                // block 0's clock64 / globaltimer stamps
  BlockSpan* spans;                  // [block]: where and when each block ran
};

// The compiled kernel; nullptr for a type mma.sync lacks or an ILP outside 1..kMaxIlp.
const void* mma_sync_kernel(const MmaSyncVariant& v);

// What a type's kernel needs: e4m3 (an sm_89 form) is built for sm_90a alone, the rest for every
// architecture since sm_80.
Requirements mma_sync_needs(DType d);

// e4m3's kernel (mma_sync_kernels_e4m3.cu).
const void* mma_sync_e4m3_kernel(int ilp);

}  // namespace tkprobe::tensor
