#pragma once
// The cluster probe's kernels (cluster_kernels.cu): thread-block clusters (sm_90), whose blocks read
// one another's shared memory (distributed shared memory, PTX ISA "mapa" and ld.shared::cluster).
//   chase      block 0 of one cluster follows a pointer chain that lives in block `target`'s shared
//              memory (each word the cluster address of the next), one dependent load at a time
//   stream     every block reads `target_offset` ranks along (its own with 0) with 16-byte loads
//   multicast  every block of a cluster receives the same sequence of tiles by TMA, either multicast by
//              rank 0 (read from L2 once per cluster) or loaded by each block itself
// Launch limits come from the occupancy API (cudaOccupancyMaxActiveClusters).
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/kernel_clock.cuh"

namespace tkprobe::cluster {

inline constexpr int kPortableMax = 8;    // cluster sizes every sm_90 launch may use
inline constexpr int kNonPortableMax = 16;  // with cudaFuncAttributeNonPortableClusterSizeAllowed
inline constexpr int kChaseUnroll = 16;     // dependent loads per loop trip
inline constexpr int kThreads = 256;        // per block, both kernels
inline constexpr int kStreamBytes = 64 * 1024;  // each block's shared buffer the stream reads
inline constexpr int kStreamUnroll = 4;         // 16-byte loads in flight per thread per trip

struct Chase {
  const std::uint32_t* next;  // next[i]: the word after word i (a permutation's cycle)
  int words;                  // the chain's length in 4-byte words (its shared footprint / 4)
  int loads;                  // dependent loads timed
  int target;                 // the rank whose shared memory holds the chain (0: block 0's own)
};

struct ChaseOut {
  std::uint64_t* cycles;  // block 0: the timed loads' clock64 cycles
  ClockWindow* clock;
  std::uint32_t* sink;    // where the chase ended: keeps every load
};

struct Stream {
  int target_offset;  // read rank (own + offset) % cluster size; 0: the block's own memory
  int passes;         // reads of the whole buffer per block
};

struct StreamOut {
  ClockWindow* clock;     // block 0 of cluster 0: clock64 around its reads
  std::uint32_t* sink;    // never written in practice; keeps every load
};

// The multicast test's tile: a bf16 GEMM operand box as copy-engines loads it, 64 columns (the 128B
// swizzle's span) by 128 rows, 16 KiB. The buffer is a column of such tiles, one box wide, so tile t
// is the t-th 16 KiB of it.
inline constexpr int kTileCols = 64, kTileRows = 128, kTileElementBytes = 2;
inline constexpr int kTileBytes = kTileCols * kTileRows * kTileElementBytes;
inline constexpr int kTileAlign = 1024;  // a 128B-swizzled box starts on the swizzle's 1024-byte repeat
// The ring: the stream's 64 KiB, so a block fits where a stream block does. Half of it fills (a round
// of kTilesPerRound tiles) while the other half is read.
inline constexpr int kRingStages = kStreamBytes / kTileBytes;
inline constexpr int kTilesPerRound = kRingStages / 2;
inline constexpr int kMulticastSmem = kTileAlign + kRingStages * kTileBytes;  // room to align the ring

enum class Delivery { multicast, each_block };
constexpr const char* name(Delivery d) { return d == Delivery::multicast ? "multicast" : "each block"; }

struct Multicast {
  CUtensorMap map;  // the buffer, kTileCols wide, read a kTileRows x kTileCols box at a time, 128B-swizzled
  Delivery delivery;
  int tiles;   // in the buffer
  int rounds;  // per cluster: rounds x kTilesPerRound tiles, cluster c's k-th being (c + k x clusters) % tiles
  bool check;  // every block sums every 32-bit word of every tile it received (a slower, checked launch)
};

struct MulticastOut {
  ClockWindow* clock;   // block 0: clock64 around its rounds
  std::uint32_t* sums;  // [block]: with `check`, the sum mod 2^32 of the words it received (zeroed first)
};

// Once per cluster size, before any launch or query of it: every kernel's shared memory (a chain of
// `chase_words` words; the stream's buffer; the multicast ring) and, past 8, the non-portable size
// attribute. The error is the driver's refusal of that size: a result, not a crash.
cudaError_t prepare(int cluster_size, int chase_words);

// One cluster for the chase; `clusters` clusters of `cluster_size` blocks for the stream. Each returns
// cudaSuccess or the launch's error, and does nothing on the host but the launch.
cudaError_t launch_chase(int cluster_size, const Chase& chase, const ChaseOut& out, cudaStream_t stream);
cudaError_t launch_stream(int cluster_size, int clusters, const Stream& s, const StreamOut& out, cudaStream_t stream);
cudaError_t launch_multicast(int cluster_size, int clusters, const Multicast& m, const MulticastOut& out,
                             cudaStream_t stream);

// How many clusters of `cluster_size` stream blocks (kThreads threads, kStreamBytes shared each) the
// GPU runs at once, or the error that says why none.
cudaError_t max_active_clusters(int cluster_size, int* clusters);
// The same for the multicast kernel's blocks (kThreads threads, kMulticastSmem shared each).
cudaError_t max_active_multicast_clusters(int cluster_size, int* clusters);

// Bytes one block reads in a stream launch.
constexpr double stream_bytes_per_block(int passes) { return double(kStreamBytes) * passes; }
// Bytes one block receives into its shared memory in a multicast launch, whichever the delivery.
constexpr double multicast_bytes_per_block(int rounds) { return double(kTileBytes) * kTilesPerRound * rounds; }

}  // namespace tkprobe::cluster
