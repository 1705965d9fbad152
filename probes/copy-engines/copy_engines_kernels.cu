#include "probes/copy-engines/copy_engines_kernels.hpp"
#include "src/errors.hpp"
#include "tk/arch/mbarrier.cuh"
#include "tk/arch/shared_memory.cuh"
#include "tk/arch/tma.cuh"

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

// ---- the TMA: one producer thread, consumers released through mbarriers ----------------------------

// The producer (one thread): box k goes to stage s = k % kStages, the n = k / kStages-th use of
// that stage. Before reusing it (n >= 1) it waits for the consumers to have released use n - 1
// (empty[s], phase n - 1), then arms full[s] with the box's bytes and issues the copy.
__device__ void produce(const CopyParams& p, const Ring& ring) {
  for (int k = 0, t; (t = tile_of(p, k)) >= 0; ++k) {
    const int s = k % kStages, n = k / kStages;
    if (n >= 1) mbarrier_wait(ring.empty(s), (n - 1) & 1);
    mbarrier_arrive_expect_tx(ring.full(s), ring.stage_bytes);
    tma_load_2d(shared_address(ring.stage(s)), p.map, t % kTilesAcross * p.box_cols, t / kTilesAcross * p.box_rows,
                ring.full(s));
  }
}

// A consumer warp: waits for use n of stage s to land (full[s], phase n), reads it, and once the
// whole warp has read it (__syncwarp) releases it with one arrival on empty[s].
__device__ std::uint32_t consume(const CopyParams& p, const Ring& ring, int thread) {
  std::uint32_t acc = 0;
  for (int k = 0; tile_of(p, k) >= 0; ++k) {
    const int s = k % kStages, n = k / kStages;
    mbarrier_wait(ring.full(s), n & 1);
    acc ^= fold_stage(ring.stage(s), ring.stage_bytes, thread);
    __syncwarp();
    if (thread % kWarpThreads == 0) mbarrier_arrive(ring.empty(s));
  }
  return acc;
}

// ---- the kernels ---------------------------------------------------------------------------------

// Warp 0 is the producer, of which thread 0 issues every copy; warps 1..kConsumerWarps consume.
// Stages are reused without any CTA-wide barrier: only the mbarriers order copy and read.
__global__ void __launch_bounds__(kConsumerThreads + kWarpThreads)
    tma_copy_kernel(const __grid_constant__ CopyParams p) {
  extern __shared__ std::uint8_t smem[];
  const Ring ring = ring_in(smem, p);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(ring.full(s), 1);                // the producer's arrive.expect_tx
      mbarrier_init(ring.empty(s), kConsumerWarps);  // one arrival per consumer warp
    }
    fence_mbarrier_init();
  }
  __syncthreads();
  const ClockStamp start = clock_stamp();
  if (threadIdx.x < kWarpThreads) {
    if (threadIdx.x == 0) produce(p, ring);
  } else {
    publish(consume(p, ring, threadIdx.x - kWarpThreads), p.sink);
  }
  finish(p, start);
}

// kStages - 1 boxes in flight while one is read. At box k: wait for this thread's group k
// (at most kStages - 2 younger ones pending), __syncthreads (everyone's copies of box k have
// landed, and everyone has finished reading box k - 1), refill box k - 1's stage with box
// k + kStages - 1, read box k.
__global__ void __launch_bounds__(kConsumerThreads) cp_async_copy_kernel(const __grid_constant__ CopyParams p) {
  extern __shared__ std::uint8_t smem[];
  const Ring ring = ring_in(smem, p);
  const Slice me = slice_of(p, threadIdx.x);
  const ClockStamp start = clock_stamp();
  for (int k = 0; k < kStages - 1; ++k) issue_cp_async(p, ring, me, k);
  std::uint32_t acc = 0;
  for (int k = 0; tile_of(p, k) >= 0; ++k) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    issue_cp_async(p, ring, me, k + kStages - 1);
    acc ^= fold_stage(ring.stage(k % kStages), ring.stage_bytes, threadIdx.x);
  }
  publish(acc, p.sink);
  finish(p, start);
}

// Synchronous: copy box k through registers into stage k % kStages, __syncthreads, read it.
// A thread rewrites a stage kStages boxes later, after the next box's barrier, which every
// thread reaches only once done reading this one: one barrier per box suffices.
__global__ void __launch_bounds__(kConsumerThreads) warp_copy_kernel(const __grid_constant__ CopyParams p) {
  extern __shared__ std::uint8_t smem[];
  const Ring ring = ring_in(smem, p);
  const Slice me = slice_of(p, threadIdx.x);
  const ClockStamp start = clock_stamp();
  std::uint32_t acc = 0;
  for (int k = 0, t; (t = tile_of(p, k)) >= 0; ++k) {
    std::uint8_t* stage = ring.stage(k % kStages);
    copy_box_through_registers(p, box_origin(p, t), shared_address(stage), me);
    __syncthreads();
    acc ^= fold_stage(stage, ring.stage_bytes, threadIdx.x);
  }
  publish(acc, p.sink);
  finish(p, start);
}

}  // namespace

const void* kernel(Engine e) {
  switch (e) {
    case Engine::tma:
      return reinterpret_cast<const void*>(&tma_copy_kernel);
    case Engine::cp_async:
      return reinterpret_cast<const void*>(&cp_async_copy_kernel);
    default:
      return reinterpret_cast<const void*>(&warp_copy_kernel);
  }
}

void launch(Engine e, const CopyParams& p, int ctas, std::size_t smem, cudaStream_t stream) {
  void* args[] = {const_cast<CopyParams*>(&p)};
  TK_CUDA(cudaLaunchKernel(kernel(e), dim3(ctas), dim3(threads_per_cta(e)), args, smem, stream));
}

}  // namespace tkprobe::copy_engines
