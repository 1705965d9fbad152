#pragma once
// A dependent pointer chase through global memory by a single thread, one link per 128-byte line
// (global_chase.cu): mem-latency's ladder from L1 to HBM, and the l2 probe's footprint ladder.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "src/kernel_clock.cuh"

namespace tkprobe::global_chase {

inline constexpr int kLineBytes = 128;  // one link per L1/L2 line, so no two links share a line
inline constexpr int kLineWords = kLineBytes / 8;
inline constexpr int kUnroll = 8;  // loads per loop trip (the SASS test expects this many)

// Where the chase's loads may hit (PTX ISA 9.7.9.8 "ld", cache operators): .ca caches in L1 and
// L2, .cg in L2 only, so an L2 latency is not lowered by the lines L1 happens to hold.
enum class Path { l1_and_l2, l2_only };

// buffer[l * kLineWords] = address of buffer[next[l] * kLineWords] for every line l.
void link(std::uint64_t* buffer, const std::uint32_t* next, std::uint32_t lines, cudaStream_t stream);

struct ChaseOut {
  std::uint64_t* cycles;  // the timed chase's SM cycles
  std::uint64_t* sink;    // the address the chase ended on (keeps every load live)
  ClockWindow* clock;
};

// One thread: `warm_steps` untimed loads (filling the caches), then `steps` timed ones (both
// multiples of kUnroll), from `start` (a line's first word).
void launch_chase(Path path, const std::uint64_t* start, long long warm_steps, long long steps, const ChaseOut& out,
                  cudaStream_t stream);

// The line a chase stands on after `steps` loads from line `line` of the chain `next` (walked on
// the host: what every chase's sink must hold), and that line's device address.
inline std::uint32_t line_after(const std::vector<std::uint32_t>& next, std::uint32_t line, long long steps) {
  for (long long i = 0; i < steps; ++i) line = next[line];
  return line;
}
inline std::uint64_t address_of(const std::uint64_t* base, std::uint32_t line) {
  return reinterpret_cast<std::uint64_t>(base + std::uint64_t(line) * kLineWords);
}

// `n` rounded up to whole loop trips.
constexpr long long whole_trips(long long n) { return (n + kUnroll - 1) / kUnroll * kUnroll; }

}  // namespace tkprobe::global_chase
