#pragma once
// cp.async (PTX ISA, Data Movement and Conversion Instructions: "cp.async",
// "cp.async.commit_group", "cp.async.wait_group"; sm_80 and newer): a thread copies 4, 8 or 16
// bytes from global to shared memory without passing them through its registers. The copies
// it has issued since its last commit form one group; waiting for a group makes its writes
// visible to the waiting thread only, so other threads read them after a barrier.
#include <cstdint>

namespace tk::arch {

inline constexpr int kCpAsyncBytes = 16;  // the .cg form copies 16 bytes and bypasses L1

// 16 bytes from `src` (16-byte aligned, global) to shared address `dst` (16-byte aligned).
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], %2;" ::"r"(dst), "l"(src), "n"(kCpAsyncBytes) : "memory");
}

// Closes this thread's current group of copies.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until at most `Pending` of this thread's committed groups are incomplete.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(Pending) : "memory");
}

}  // namespace tk::arch
