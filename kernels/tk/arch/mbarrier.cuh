#pragma once
// mbarrier (PTX ISA 9.7.13.15 "Parallel Synchronization and Communication Instructions:
// mbarrier"): a 64-bit shared-memory barrier whose phase completes once its expected arrivals
// have arrived and, for asynchronous copies, its expected transaction bytes have landed.
// Addresses are shared-state-space addresses (tk::arch::shared_address).
#include <cstdint>

namespace tk::arch {

__device__ __forceinline__ void mbarrier_init(std::uint32_t bar, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals) : "memory");
}

// Makes initialised barriers visible to the async proxy (the TMA's complete-tx) before any copy.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// One arrival that also raises the bytes the current phase waits for (expect-tx): the phase
// completes once the arrival count is met and that many bytes have landed (complete-tx).
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

// An arrival with .release semantics (the default): this thread's earlier accesses are ordered
// before whoever acquires the completed phase.
__device__ __forceinline__ void mbarrier_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Waits (acquire) until the phase of parity `parity` has completed. try_wait suspends the thread
// for a while inside the instruction before returning false, so the loop polls rarely.
__device__ __forceinline__ void mbarrier_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  while (!done) {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  }
}

}  // namespace tk::arch
