#pragma once
// Streaming kernels (bandwidth_kernels.cu), shared by bandwidth, occupancy's stream sweep and
// copy-engines' fill: streaming reads, writes and copies of 16-byte words with several loads in flight
// per thread, an L2-resident read that bypasses L1, and the fill and check kernels that make every
// result verifiable.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "src/kernel_clock.cuh"

namespace tkprobe::bandwidth {

enum class Stream { read, write, copy };

inline constexpr int kThreads = 256;
inline constexpr int kBlocksPerSm = 8;  // 2048 threads: a full SM, many loads in flight

// Cache hints on the 16-byte accesses (PTX ISA 9.7.9.8 "ld"): none, or .cs (streaming, evict
// first) on loads and stores. (An L2::256B prefetch on loads measured slower on the H200 and was
// dropped: docs/decisions/006-hbm-one-block-per-tile.md.)
enum class Hint { none, streaming };
inline constexpr Hint kHints[] = {Hint::none, Hint::streaming};
constexpr const char* name(Hint h) { return h == Hint::none ? "none" : "evict-first (.cs)"; }
// 16-byte loads each thread issues before using any.
inline constexpr int kLoadsInFlight[] = {4, 8};

// Which words a block moves. grid_stride: a grid that fills the GPU once (kBlocksPerSm per SM)
// loops over the buffer, a thread's words a grid-width apart. tiles: one block per contiguous
// tile of kThreads x loads_in_flight words, a grid as large as the buffer needs, so the words
// in flight at any moment form one compact window that sweeps memory in order.
enum class Schedule { grid_stride, tiles };
inline constexpr Schedule kSchedules[] = {Schedule::grid_stride, Schedule::tiles};
constexpr const char* name(Schedule s) { return s == Schedule::grid_stride ? "grid-stride" : "tiles"; }

struct Variant {
  int loads_in_flight = 4;
  Hint hint = Hint::none;
  Schedule schedule = Schedule::grid_stride;
};

// The grid a variant runs `count` words with: `resident` blocks for grid_stride, one per tile otherwise.
int blocks_for(Variant v, std::size_t count, int resident);

// Word w of a filled buffer: a hash of (w, seed), never a run of zeros.
constexpr std::uint32_t pattern(std::uint64_t word, std::uint32_t seed) {
  std::uint64_t x = (word + 1) * 0x9e3779b97f4a7c15ull ^ seed;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  return static_cast<std::uint32_t>(x >> 32) | 1u;
}

// XOR of every 32-bit word of a buffer of `count` 16-byte words filled with pattern(seed): what
// a kernel that reads each word once and XORs them must return (on the host: a pass over them all).
inline std::uint32_t pattern_xor(std::size_t count, std::uint32_t seed) {
  std::uint32_t x = 0;
  for (std::uint64_t w = 0; w < 4 * count; ++w) x ^= pattern(w, seed);
  return x;
}

// buffer[i] holds pattern(4i .. 4i+3, seed).
void fill(uint4* buffer, std::size_t count, std::uint32_t seed, cudaStream_t stream);

// read: XOR of every word into *sink; write: dst = pattern(seed); copy: dst = src. `smem` is
// dynamic shared memory the kernel does not use: padding that limits blocks per SM (occupancy).
// With `spans` (one per block), each block records its SM and when it ran.
void launch_stream(Stream s, Variant v, const uint4* src, uint4* dst, std::size_t count, std::uint32_t seed,
                   std::uint32_t* sink, int blocks, std::size_t smem, cudaStream_t stream,
                   BlockSpan* spans = nullptr);

// The kernel launch_stream runs, for the occupancy API.
const void* stream_kernel(Stream s, Variant v);

// Reads `count` words `passes` times with ld.global.cg (cached in L2 only), XOR into *sink.
void launch_l2_read(const uint4* src, std::size_t count, int passes, std::uint32_t* sink, int blocks,
                    cudaStream_t stream);

// Words of `buffer` that differ from pattern(seed), added to *mismatches.
void count_mismatches(const uint4* buffer, std::size_t count, std::uint32_t seed,
                      unsigned long long* mismatches, cudaStream_t stream);

}  // namespace tkprobe::bandwidth
