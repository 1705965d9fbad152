#pragma once
// Shared-memory addresses as the PTX instructions that take them want them: 32-bit offsets in
// the shared window (ld.shared, ldmatrix, mbarrier, cp.async.bulk, wgmma descriptors).
#include <cstdint>

namespace tk::arch {

__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 zero bytes at shared address `dst` (16-byte aligned): one st.shared.v4.
__device__ __forceinline__ void store_zero_16(std::uint32_t dst) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};" ::"r"(dst), "r"(0) : "memory");
}

}  // namespace tk::arch
