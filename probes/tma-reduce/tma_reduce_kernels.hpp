#pragma once
// The tma-reduce probe's kernels (tma_reduce_kernels.cu, sm_90a): every block adds one tile of f32
// into global memory `passes` times, either as one asynchronous bulk reduction per tile issued by
// one thread (cp.reduce.async.bulk ... .add.f32) or by every thread with per-element atomics
// (red.global.add.f32). The tile holds 1.0 everywhere, so every sum is an exact small integer.
#include <cuda_runtime_api.h>

#include <cstddef>

namespace tkprobe::tma_reduce {

enum class Method { bulk, atomic };

inline constexpr int kThreads = 128;
inline constexpr int kTileBytes = 16 * 1024;
inline constexpr int kTileFloats = kTileBytes / 4;

struct Launch {
  int blocks;
  int targets;  // distinct tiles of `dst` the blocks add into: block b into tile b % targets
  int passes;   // additions of the tile per block
};

// Adds into dst ([targets][kTileFloats] floats, zeroed by the caller).
void launch_reduce(Method m, const Launch& l, float* dst, cudaStream_t stream);

}  // namespace tkprobe::tma_reduce
