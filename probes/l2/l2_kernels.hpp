#pragma once
// Launchers for the l2 probe's kernels (l2_kernels.cu): a latency map (every SM times a dependent
// load from each line of a buffer held in L2) and a stream (every SM reads a list of lines).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/kernel_clock.cuh"

namespace tkprobe::l2 {

inline constexpr int kLineBytes = 128;   // an L2 line: each line of the buffer is timed on its own
inline constexpr int kLineWords = kLineBytes / 4;
inline constexpr int kShortChase = 8;    // dependent loads in the short and long timed chases of a line:
inline constexpr int kLongChase = 16;    // their difference over 8 loads is the latency, fixed costs cancelled
inline constexpr int kStreamThreads = 256;
inline constexpr int kStreamBlocksPerSm = 4;
inline constexpr int kLinesPerWarpLoad = 32 * 16 / kLineBytes;  // a warp's 16-byte loads cover 4 lines

struct MapOut {
  std::uint32_t* cycles;  // [block][line]: the long chase's cycles minus the short one's
  std::uint32_t* smid;    // [block]: the SM the block ran on
  ClockWindow* clock;     // [block]: clock64 / %globaltimer around the block's whole map
};

// Lets the map kernel take `smem_bytes` of dynamic shared memory: once, before its launches.
void prepare_map(int smem_bytes);

// `blocks` blocks of one thread's work, each with `smem_bytes` of dynamic shared memory (enough
// that no SM takes two), over `lines` lines of `buffer` (zeros: each load's value is the next
// load's offset). Blocks are SMs: launch as many as there are.
void launch_map(const std::uint32_t* buffer, int lines, int blocks, int smem_bytes, const MapOut& out,
                cudaStream_t stream);

struct StreamArgs {
  const std::uint32_t* buffer;
  const std::uint32_t* lists;         // [group][count]: line indices each group's blocks read
  int count;                          // lines per list
  const std::int32_t* group_of_smid;  // [smid]: which list a block reads, by the SM it runs on
  int smids;                          // entries in group_of_smid
  int passes;                         // times each block reads its whole list
  std::uint32_t* sink;                // written only if the loads' XOR hits a magic value: keeps them live
};

// kStreamBlocksPerSm x `sms` blocks of kStreamThreads; each reads its list `passes` times with
// 16-byte L2-only loads. Bytes read: blocks x passes x count x kLineBytes.
void launch_stream(const StreamArgs& a, int sms, cudaStream_t stream);

}  // namespace tkprobe::l2
