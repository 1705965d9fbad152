#pragma once
// Launchers for mem-latency's kernels (probes/mem-latency/mem_latency_kernels.cu): a dependent pointer chase
// through global memory, one link per 128-byte line, by a single thread.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/kernel_clock.cuh"

namespace tkprobe::mem_latency {

inline constexpr int kLineBytes = 128;  // one link per L1/L2 line, so no two links share a line
inline constexpr int kLineWords = kLineBytes / 8;
inline constexpr int kUnroll = 8;  // loads per loop trip (the SASS test expects this many)

// buffer[l * kLineWords] = address of buffer[next[l] * kLineWords] for every line l.
void link(std::uint64_t* buffer, const std::uint32_t* next, std::uint32_t lines, cudaStream_t stream);

struct ChaseOut {
  std::uint64_t* cycles;  // the timed chase's SM cycles
  std::uint64_t* sink;    // the address the chase ended on (keeps every load live)
  ClockWindow* clock;
};

// One thread: `warm_steps` untimed loads (filling this SM's L1 and the L2), then `steps` timed ones
// (both multiples of kUnroll), from buffer[0].
void launch_chase(const std::uint64_t* buffer, long long warm_steps, long long steps, const ChaseOut& out,
                  cudaStream_t stream);

}  // namespace tkprobe::mem_latency
