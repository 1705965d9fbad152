#pragma once
// What the copy-engines kernels share (copy_engines_kernels.cu, every architecture, and
// copy_engines_tma_kernel.cu, sm_90a alone): the ring of stages, reading a stage, and the copying
// threads' slices. In an unnamed namespace: each file's kernels keep their own copy, as one file's did.
#include "probes/copy-engines/copy_engines_kernels.hpp"
#include "tk/arch/shared_memory.cuh"

namespace tkprobe::copy_engines {
namespace {

using namespace tk::arch;

// Unrolls that keep several independent shared reads, or cp.async copies, in flight per thread.
constexpr int kFoldUnroll = 4;
constexpr int kCpAsyncUnroll = 4;

// ---- the ring of stages ------------------------------------------------------------------------

// kStages stages of one box each from the first kSwizzleAtom boundary of dynamic shared memory
// (a 128B-swizzled box must start on one: the pattern repeats every 1024 bytes), then the TMA
// kernel's barriers: full[s] completes when stage s has landed, empty[s] when it has been read.
struct Ring {
  std::uint8_t* base;
  int stage_bytes;
  __device__ std::uint8_t* stage(int s) const { return base + s * stage_bytes; }
  __device__ std::uint32_t full(int s) const { return shared_address(stage(kStages)) + s * sizeof(std::uint64_t); }
  __device__ std::uint32_t empty(int s) const { return full(kStages + s); }
};

__device__ Ring ring_in(std::uint8_t* smem, const CopyParams& p) {
  const std::uint32_t raw = shared_address(smem);
  return {smem + (kSwizzleAtom - raw % kSwizzleAtom) % kSwizzleAtom, p.box_rows * p.box_cols * kElementBytes};
}

// The k-th box this CTA takes (grid-stride order), or -1 past the end.
__device__ int tile_of(const CopyParams& p, int k) {
  const int t = blockIdx.x + k * gridDim.x;
  return t < p.tiles ? t : -1;
}

// ---- consuming a stage -------------------------------------------------------------------------

// XOR of every 32-bit word of a stage: where the swizzle put each chunk does not change it; a
// chunk that had not landed when read (stale bytes of an earlier box) does. Consecutive threads
// read consecutive 16-byte chunks: conflict-free.
__device__ std::uint32_t fold_stage(const std::uint8_t* stage, int bytes, int thread) {
  const uint4* chunks = reinterpret_cast<const uint4*>(stage);
  std::uint32_t acc = 0;
#pragma unroll kFoldUnroll
  for (int c = thread; c < bytes / kChunkBytes; c += kConsumerThreads) {
    const uint4 v = chunks[c];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  return acc;
}

// One XOR per warp into the sink (called by whole warps).
__device__ void publish(std::uint32_t acc, std::uint32_t* sink) {
  acc = __reduce_xor_sync(0xffffffffu, acc);
  if (threadIdx.x % kWarpThreads == 0) atomicXor(sink, acc);
}

// Every thread of the CTA done: record where and when the CTA ran (occupancy: CTAs that
// overlapped on an SM really shared it).
__device__ void finish(const CopyParams& p, ClockStamp start) {
  __syncthreads();
  record_span(p.spans, start, clock_stamp());
}

// ---- threads that copy: cp-async and warp --------------------------------------------------------

// A copying thread's part of every box: one 16-byte column (`chunk_offset` bytes into a box
// row) of rows `row`, `row + rows_per_pass`, ... Threads beyond whole rows of chunks copy
// nothing (row = box_rows).
struct Slice {
  int row, rows_per_pass, chunk_offset;
};

__device__ Slice slice_of(const CopyParams& p, int thread) {
  const int chunks_per_row = p.box_cols * kElementBytes / kChunkBytes;
  const int rows_per_pass = kConsumerThreads / chunks_per_row;
  if (thread >= rows_per_pass * chunks_per_row) return {p.box_rows, rows_per_pass, 0};
  return {thread / chunks_per_row, rows_per_pass, thread % chunks_per_row * kChunkBytes};
}

// The first byte of box t in global memory: box row t / kTilesAcross, box column t % kTilesAcross.
__device__ const std::uint8_t* box_origin(const CopyParams& p, int t) {
  return p.src + std::size_t(t / kTilesAcross) * p.box_rows * p.row_bytes +
         t % kTilesAcross * (p.box_cols * kElementBytes);
}

// Where a box's byte (row, offset) goes in its stage: row-major, 128B-swizzled as the TMA
// places it (kernels/tk/layout/swizzle.hpp, checked against the hardware by tma-swizzle).
__device__ std::uint32_t stage_offset(const CopyParams& p, int row, int offset) {
  return tk::layout::swizzle(std::uint32_t(row * p.box_cols * kElementBytes + offset), kSwizzle);
}

// PTX ISA, "cp.async": .cg caches in L2 only (not L1); 16 bytes; the thread goes on at once.
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const std::uint8_t* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Issues box k's copies into stage k % kStages; commits a group either way, so that group
// counting stays one group per box.
__device__ void issue_cp_async(const CopyParams& p, const Ring& ring, const Slice& me, int k) {
  const int t = tile_of(p, k);
  if (t >= 0) {
    const std::uint8_t* box = box_origin(p, t);
    const std::uint32_t stage = shared_address(ring.stage(k % kStages));
#pragma unroll kCpAsyncUnroll
    for (int row = me.row; row < p.box_rows; row += me.rows_per_pass) {
      cp_async_16(stage + stage_offset(p, row, me.chunk_offset), box + row * p.row_bytes + me.chunk_offset);
    }
  }
  cp_async_commit();
}

__device__ __forceinline__ uint4 ld_global_v4(const std::uint8_t* src) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(src));
  return v;
}
__device__ __forceinline__ void st_shared_v4(std::uint32_t dst, uint4 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// The warp engine's copy of one box: kWarpLoadsInFlight loads into registers, then their stores.
__device__ void copy_box_through_registers(const CopyParams& p, const std::uint8_t* box, std::uint32_t stage,
                                           const Slice& me) {
  for (int first = me.row; first < p.box_rows; first += kWarpLoadsInFlight * me.rows_per_pass) {
    uint4 v[kWarpLoadsInFlight];
#pragma unroll
    for (int u = 0; u < kWarpLoadsInFlight; ++u) {
      const int row = first + u * me.rows_per_pass;
      if (row < p.box_rows) v[u] = ld_global_v4(box + row * p.row_bytes + me.chunk_offset);
    }
#pragma unroll
    for (int u = 0; u < kWarpLoadsInFlight; ++u) {
      const int row = first + u * me.rows_per_pass;
      if (row < p.box_rows) st_shared_v4(stage + stage_offset(p, row, me.chunk_offset), v[u]);
    }
  }
}

}  // namespace
}  // namespace tkprobe::copy_engines
