// The cp.async and warp-load copies, built for every architecture; the TMA's is in
// copy_engines_tma_kernel.cu, built for sm_90a alone.
#include "probes/copy-engines/copy_engines_stage.cuh"
#include "src/errors.hpp"

namespace tkprobe::copy_engines {
namespace {

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
      return tma_kernel();
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
