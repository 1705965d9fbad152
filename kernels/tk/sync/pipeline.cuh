#pragma once
// What a producer/consumer pipeline needs: a ring of stages whose `full` barrier completes when
// the TMA has landed a stage and whose `empty` barrier completes when every consumer warp is done
// with it, and register reallocation between the warpgroups (PTX ISA 9.7.17.1 "setmaxnreg").
#include <cstdint>

#include "tk/arch/mbarrier.cuh"
#include "tk/arch/shared_memory.cuh"

namespace tk {

// Use n of stage s (n = step / Stages) completes phase n of its barriers: wait on parity n & 1.
template <int Stages>
struct pipeline {
  std::uint64_t full[Stages], empty[Stages];

  // Steps count up from 0: unsigned, the modulo and division are a mask and a shift (signed, a
  // power-of-two Stages costs four more instructions each, on a consumer's path every tile).
  static constexpr int stage(int step) { return int(unsigned(step) % Stages); }
  static constexpr std::uint32_t parity(int step) { return (unsigned(step) / Stages) & 1; }

  // One thread, before any copy: `releasers` arrivals free a stage (release says whose).
  __device__ void init(int releasers) {
    for (int s = 0; s < Stages; ++s) {
      arch::mbarrier_init(arch::shared_address(&full[s]), 1);
      arch::mbarrier_init(arch::shared_address(&empty[s]), releasers);
    }
    arch::fence_mbarrier_init();
  }
  // Producer: wait until the stage of `step` is free (its previous use released), then arm its
  // full barrier for `bytes` of copies. Returns the barrier the copies complete on.
  __device__ std::uint32_t acquire(int step, std::uint32_t bytes) {
    if (step >= Stages) arch::mbarrier_wait(arch::shared_address(&empty[stage(step)]), parity(step - Stages));
    const std::uint32_t bar = arch::shared_address(&full[stage(step)]);
    arch::mbarrier_arrive_expect_tx(bar, bytes);
    return bar;
  }
  // Consumer: wait until the stage of `step` has landed.
  __device__ void wait_full(int step) { arch::mbarrier_wait(arch::shared_address(&full[stage(step)]), parity(step)); }
  // Consumer (one lane of a warp that reads the stage only through wgmma, every thread that loads
  // from it itself): done with the stage of `step`.
  __device__ void release(int step) { arch::mbarrier_arrive(arch::shared_address(&empty[stage(step)])); }
};

namespace warpgroup {

// Hands registers back (producer warpgroups, which need few) or takes them (consumers): every
// thread of the warpgroup executes it; the counts are multiples of 8 in 24..256.
template <int Registers>
__device__ __forceinline__ void decrease_registers() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Registers));
}
template <int Registers>
__device__ __forceinline__ void increase_registers() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Registers));
}

// Named barriers (PTX ISA 9.7.13.1 "bar", "barrier"): ids 1..15 (0 is __syncthreads's), each
// completing once `threads` threads have arrived. sync arrives and waits; arrive only arrives,
// so one warpgroup can let another go on without waiting itself.
//   sync(id): the warpgroup's 128 threads alone.
//   sync(id, 256) in one warpgroup + arrive(id, 256) in another: the first waits for the second.
__device__ __forceinline__ void sync(int id, int threads = 128) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Which warpgroup of the block. Through a shuffle from lane 0, so that the compiler knows every lane
// holds the same value: the tile addresses and wgmma descriptors built from it then live in uniform
// registers, and a product's wgmma issue back to back (without it, two R2UR moves before each).
// Every lane of the warp must call it.
__device__ __forceinline__ int index() { return __shfl_sync(0xffffffffu, int(threadIdx.x / 128), 0); }
// The same, computed by each thread: the compiler keeps what derives from it in per-thread registers.
// For a kernel that measured slower with the uniform one (the attention backward at D = 64).
__device__ __forceinline__ int index_per_thread() { return threadIdx.x / 128; }
__device__ __forceinline__ int thread() { return threadIdx.x % 128; }  // thread within the warpgroup

}  // namespace warpgroup
}  // namespace tk
