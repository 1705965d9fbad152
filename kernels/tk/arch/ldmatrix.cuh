#pragma once
// ldmatrix / stmatrix .x4 (PTX ISA 9.7.13.4.15 and 9.7.13.4.16): a warp moves four 8x8 matrices
// of 16-bit elements between shared memory and registers. Lanes 8m..8m+7 give the shared
// addresses of rows 0..7 of matrix m (16 bytes each, 16-byte aligned); register m of lane l
// holds row l/4, elements 2(l%4) and +1 of matrix m, or with .trans the transpose (rows 2(l%4)
// and +1 of column l/4). ldmatrix needs sm_75, stmatrix sm_90.
#include <cstdint>

namespace tk::arch {

template <bool Trans>
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t address) {
  if constexpr (Trans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address)
                 : "memory");
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address)
                 : "memory");
  }
}

template <bool Trans>
__device__ __forceinline__ void stmatrix_x4(std::uint32_t address, const std::uint32_t (&r)[4]) {
  if constexpr (Trans) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};"
                 :
                 : "r"(address), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
  } else {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 :
                 : "r"(address), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
  }
}

}  // namespace tk::arch
