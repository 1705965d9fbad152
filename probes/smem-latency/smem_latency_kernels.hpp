#pragma once
// Launcher for smem-latency's pointer chase (probes/smem-latency/smem_latency_kernels.cu).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/kernel_clock.cuh"

namespace tkprobe::smem_latency {

inline constexpr int kUnroll = 16;  // dependent loads per loop trip; chase lengths are multiples

// How the chase finds its next address.
enum class Addressing {
  precomputed,  // each word holds the next word's shared address: load-to-use alone
  indexed,      // each word holds the next word's index, as `j = a[j]` code does: adds address math
};

struct Chase {
  const std::uint32_t* next;  // [words] next word index, as chain builds it
  int words;                  // the chain's footprint in 4-byte words
  int loads;                  // loads in the timed chase, a multiple of kUnroll
};

struct Outputs {
  std::uint64_t* cycles;  // clock64 cycles of the timed chase
  std::uint32_t* sink;    // where the chase ended, so no load is dead
  ClockWindow* clock;     // stamps around the timed chase
};

// One thread chases the chain through shared memory: an untimed warm-up chase (instruction
// cache), then the timed one.
void launch_chase(Addressing addressing, const Chase& chase, const Outputs& out, cudaStream_t stream);

}  // namespace tkprobe::smem_latency
