// The TMA's copy: a producer thread and mbarriers, which exist on sm_90a alone.
#include "probes/copy-engines/copy_engines_stage.cuh"
#include "tk/arch/mbarrier.cuh"
#include "tk/arch/tma.cuh"

namespace tkprobe::copy_engines {
namespace {

using namespace tk::arch;

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

}  // namespace

const void* tma_kernel() { return reinterpret_cast<const void*>(&tma_copy_kernel); }

}  // namespace tkprobe::copy_engines
