#pragma once
// The copy-engines probe's kernels (probes/copy-engines/copy_engines_kernels.cu): three ways to move a bf16
// tensor from global to shared memory, tile by tile, through a ring of kStages shared-memory
// stages, each tile read back by the consumer threads and folded into an XOR checksum:
//   tma      one thread issues cp.async.bulk.tensor per box; stages complete on mbarriers
//   cp-async every thread issues 16-byte cp.async.cg copies; commit_group / wait_group
//   warp     every thread loads 16 bytes into registers (ld.global.v4), then stores them
//            (st.shared.v4): synchronous, the fallback without either engine
// Every engine puts a box's bytes where the TMA's 128B swizzle puts them, so all three leave the
// layout a wgmma consumer would read.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/tk/layout/swizzle.hpp"
#include "probes/timed_kernels/tma_kernels.hpp"
#include "src/kernel_clock.cuh"

namespace tkprobe::copy_engines {

enum class Engine { tma, cp_async, warp };
inline constexpr Engine kEngines[] = {Engine::tma, Engine::cp_async, Engine::warp};
constexpr const char* name(Engine e) { return e == Engine::tma ? "tma" : e == Engine::cp_async ? "cp-async" : "warp"; }

using Element = __nv_bfloat16;  // copied as bits: no arithmetic is done on it
inline constexpr int kElementBytes = sizeof(Element);
inline constexpr int kChunkBytes = sizeof(uint4);  // one cp.async.cg, ld.global.v4 or st.shared.v4
inline constexpr auto kSwizzle = tk::layout::Swizzle::b128;
inline constexpr int kSwizzleSpan = static_cast<int>(kSwizzle);  // a box row's bytes may not exceed it
inline constexpr int kSwizzleAtom = tma::kSmemAlign;  // 8 lines of 128 B: the pattern's repeat, a stage's alignment
inline constexpr int kMaxBoxDim = 256;                // cuTensorMapEncodeTiled's limit per box dimension

inline constexpr int kStages = 4;
inline constexpr int kWarpThreads = 32;
inline constexpr int kConsumerWarps = 4;  // one warpgroup reads every stage, as a wgmma consumer would
inline constexpr int kConsumerThreads = kConsumerWarps * kWarpThreads;
// The TMA kernel adds one producer warp, of which one thread issues; the other engines copy with
// their consumer threads.
constexpr int threads_per_cta(Engine e) {
  return e == Engine::tma ? kConsumerThreads + kWarpThreads : kConsumerThreads;
}
// The warp engine's loads each thread has in flight before its first store (bandwidth's best
// HBM read also keeps 8 per thread in flight).
inline constexpr int kWarpLoadsInFlight = 8;

// The tensor is kTilesAcross boxes wide: a box row is a short stretch of a long tensor row, as in
// a GEMM operand, so every engine has 2-D addresses to generate.
inline constexpr int kTilesAcross = 64;

constexpr int inner_bytes(tma::Box b) { return b.cols * kElementBytes; }
constexpr int stage_bytes(tma::Box b) { return b.rows * inner_bytes(b); }
// Threads that copy a box: those of kConsumerThreads that fill whole rows of 16-byte chunks
// (the TMA issues from one).
constexpr int copying_threads(Engine e, tma::Box b) {
  const int chunks_per_row = inner_bytes(b) / kChunkBytes;
  return e == Engine::tma ? 1 : kConsumerThreads / chunks_per_row * chunks_per_row;
}

// The buffer as a 2-D tensor that the boxes tile exactly: kTilesAcross boxes per row of boxes,
// as many rows of boxes as fit. It covers the first `bytes` of the buffer.
struct Tensor {
  tma::Extent extent;  // in elements
  std::size_t row_bytes;
  int tiles;
  std::size_t bytes;
};
constexpr Tensor tensor_in(std::size_t buffer_bytes, tma::Box b) {
  const std::size_t row_bytes = std::size_t(inner_bytes(b)) * kTilesAcross;
  const std::size_t box_rows_down = buffer_bytes / (row_bytes * b.rows);
  const std::size_t rows = box_rows_down * b.rows;
  return {{rows, std::uint64_t(b.cols) * kTilesAcross}, row_bytes, int(box_rows_down * kTilesAcross), rows * row_bytes};
}

// Dynamic shared memory a CTA needs: room to align the ring to kSwizzleAtom, the stages, and
// (TMA) a full and an empty mbarrier per stage.
constexpr std::size_t smem_bytes(Engine e, tma::Box b) {
  const std::size_t barriers = e == Engine::tma ? 2 * kStages * sizeof(std::uint64_t) : 0;
  return kSwizzleAtom + std::size_t(kStages) * stage_bytes(b) + barriers;
}

struct CopyParams {
  CUtensorMap map;          // tma: the tensor, read a box at a time, 128B-swizzled
  const std::uint8_t* src;  // cp-async, warp: the same tensor
  std::size_t row_bytes;
  int box_rows, box_cols;
  int tiles;            // boxes in the tensor; CTA b takes b, b + gridDim.x, ...
  std::uint32_t* sink;  // XOR of every 32-bit word read from shared memory, folded in
  BlockSpan* spans;     // [CTA]: where and when each ran
};

// The kernel for an engine (for the occupancy API and cudaFuncGetAttributes).
const void* kernel(Engine e);
// The TMA engine's kernel (copy_engines_tma_kernel.cu), built for sm_90a alone.
const void* tma_kernel();

// One pass over the tensor by `ctas` CTAs of threads_per_cta(e) threads with `smem` bytes of
// dynamic shared memory (at least smem_bytes(e, box), raised on the kernel beforehand).
void launch(Engine e, const CopyParams& p, int ctas, std::size_t smem, cudaStream_t stream);

}  // namespace tkprobe::copy_engines
