#pragma once
// Launchers for the bandwidth probe's kernels (probes/bandwidth_kernels.cu): streaming reads,
// writes and copies of 16-byte words with several loads in flight per thread, an L2-resident
// read that bypasses L1, and the fill and check kernels that make every result verifiable.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace tkprobe::bandwidth {

enum class Stream { read, write, copy };

inline constexpr int kThreads = 256;
inline constexpr int kBlocksPerSm = 8;  // 2048 threads: a full SM, many loads in flight

// Cache hints on the 16-byte accesses (PTX ISA 9.7.9.8 "ld"): none; .cs (streaming, evict first)
// on loads and stores; or L1::no_allocate with an L2::256B prefetch on loads.
enum class Hint { none, streaming, prefetch_256b };
inline constexpr Hint kHints[] = {Hint::none, Hint::streaming, Hint::prefetch_256b};
constexpr const char* name(Hint h) {
  return h == Hint::none ? "none" : h == Hint::streaming ? "evict-first (.cs)" : "L2::256B prefetch";
}
// 16-byte loads each thread issues before using any.
inline constexpr int kLoadsInFlight[] = {4, 8};

struct Variant {
  int loads_in_flight = 4;
  Hint hint = Hint::none;
};

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
void launch_stream(Stream s, Variant v, const uint4* src, uint4* dst, std::size_t count, std::uint32_t seed,
                   std::uint32_t* sink, int blocks, std::size_t smem, cudaStream_t stream);

// The kernel launch_stream runs, for the occupancy API.
const void* stream_kernel(Stream s, Variant v);

// Reads `count` words `passes` times with ld.global.cg (cached in L2 only), XOR into *sink.
void launch_l2_read(const uint4* src, std::size_t count, int passes, std::uint32_t* sink, int blocks,
                    cudaStream_t stream);

// Words of `buffer` that differ from pattern(seed), added to *mismatches.
void count_mismatches(const uint4* buffer, std::size_t count, std::uint32_t seed,
                      unsigned long long* mismatches, cudaStream_t stream);

}  // namespace tkprobe::bandwidth
