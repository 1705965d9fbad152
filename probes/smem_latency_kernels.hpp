#pragma once
// Launcher for smem-latency's pointer chase (probes/smem_latency_kernels.cu).
#include <cstdint>

#include <cuda_runtime_api.h>

#include "src/kernel_clock.cuh"

namespace tkprobe::smem_latency {

inline constexpr int kUnroll = 16;  // dependent loads per loop trip; chase lengths are multiples

struct Chase {
  const std::uint32_t* next;  // [words] next word index, as smem_chain builds it
  int words;                  // the chain's footprint in 4-byte words
  const int* lengths;         // [n_lengths] loads per timed chase, each a multiple of kUnroll
  int n_lengths;
};

struct Outputs {
  std::uint64_t* cycles;  // [n_lengths] clock64 cycles of each timed chase
  std::uint32_t* sink;    // where the chase ended, so no load is dead
  ClockWindow* clock;     // stamps around all chases
};

// One thread chases the chain through shared memory, timing each length in turn.
void launch_chase(const Chase& chase, const Outputs& out, cudaStream_t stream);

}  // namespace tkprobe::smem_latency
