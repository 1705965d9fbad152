#pragma once
// Warpgroup-scope matrix multiply on shared tiles through wgmma (tk/arch/wgmma.cuh): the
// warpgroup's 64 x N accumulator is four warps' 16 x N register tiles, each warp passing its own.
//
//   warpgroup::mma_ABt(acc, q, k);   // acc += Q K^T   (Q: st 64 x K, K: st N x K, both K-major)
//   warpgroup::mma_AB(acc, p, v);    // acc += P V     (V: st K x N, N contiguous: MN-major;
//                                    //                 P: st 64 x K, or each warp's rt 16 x K)
//   warpgroup::mma_AtB(acc, a, b);   // acc += A^T B   (A stored K x 64, M contiguous), and AtBt
//   warpgroup::mma_commit(); warpgroup::mma_wait<0>();
//
// Descriptors come from the tiles' own layout (tk/layout/wgmma_descriptor.hpp); a K slice of 16
// elements is selected by moving the start address, as `tkprobe wgmma-layout` shows is right.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "tk/arch/mma_types.hpp"
#include "tk/arch/shared_memory.cuh"
#include "tk/arch/wgmma.cuh"
#include "tk/types/rt.cuh"
#include "tk/types/st.cuh"

namespace tk::warpgroup {

inline constexpr int kRows = 64;     // a warpgroup's accumulator rows (m64)
inline constexpr int kSliceK = 16;   // K of one wgmma for 16-bit inputs

template <class T>
struct mma_types;
template <>
struct mma_types<__nv_bfloat16> {
  using type = arch::bf16_f32;
};
template <>
struct mma_types<__half> {
  using type = arch::f16_f32;
};

// Tile `t` as a K-major operand, from K slice `s` on.
template <class ST>
__device__ __forceinline__ std::uint64_t k_major(const ST& t, int s) {
  const int col = s * kSliceK, box = col / ST::box_cols;
  const std::uint32_t at = arch::shared_address(t.data) + box * ST::box_bytes + (col % ST::box_cols) * sizeof(typename ST::element);
  return layout::wgmma_descriptor(at, ST::operand());
}

// Tile `t` (K rows x N columns, N contiguous) as an MN-major operand, from K slice `s` on.
template <class ST>
__device__ __forceinline__ std::uint64_t mn_major(const ST& t, int s) {
  const std::uint32_t at = arch::shared_address(t.data) + s * kSliceK * ST::span;
  return layout::wgmma_descriptor(at, layout::packed_operand(layout::Major::mn, ST::swizzle, ST::cols, ST::rows));
}

// The warp's 16 x N slice of the accumulator as wgmma's registers (same order: tk/types/rt.cuh).
template <int N, class Acc>
__device__ __forceinline__ float (&registers(Acc& acc))[N / 2] {
  static_assert(sizeof(Acc) == N / 2 * sizeof(float), "the accumulator must be each warp's 16 x N float tile");
  return reinterpret_cast<float(&)[N / 2]>(acc);
}

// acc (+)= A B^T: A 64 x K and B N x K, both K-major. accumulate = false overwrites acc.
template <class Acc, class SA, class SB>
__device__ __forceinline__ void mma_ABt(Acc& acc, const SA& a, const SB& b, bool accumulate = true) {
  static_assert(SA::rows == kRows, "mma_ABt: A must have 64 rows (one warpgroup's m64)");
  static_assert(SA::cols == SB::cols, "mma_ABt: A and B must share K (their columns)");
  using Op = arch::Wgmma<typename mma_types<typename SA::element>::type, SB::rows>;
#pragma unroll
  for (int s = 0; s < SA::cols / kSliceK; ++s) {
    Op::ss(registers<SB::rows>(acc), k_major(a, s), k_major(b, s), accumulate || s > 0);
  }
}

// acc (+)= A B: A 64 x K (K-major), B K x N with N contiguous (MN-major, imm-trans-b).
template <class Acc, class SA, class SB>
__device__ __forceinline__ void mma_AB(Acc& acc, const SA& a, const SB& b, bool accumulate = true) {
  static_assert(SA::rows == kRows, "mma_AB: A must have 64 rows (one warpgroup's m64)");
  static_assert(SA::cols == SB::rows, "mma_AB: A's columns must be B's rows (K)");
  using Op = arch::Wgmma<typename mma_types<typename SA::element>::type, SB::cols>;
#pragma unroll
  for (int s = 0; s < SA::cols / kSliceK; ++s) {
    Op::template ss<0, 1>(registers<SB::cols>(acc), k_major(a, s), mn_major(b, s), accumulate || s > 0);
  }
}

// acc (+)= A^T B: A stored K x 64 (M contiguous: MN-major, imm-trans-a), B K x N (N contiguous).
template <class Acc, class SA, class SB>
__device__ __forceinline__ void mma_AtB(Acc& acc, const SA& a, const SB& b, bool accumulate = true) {
  static_assert(SA::cols == kRows, "mma_AtB: A^T must have 64 rows (A stored K x 64)");
  static_assert(SA::rows == SB::rows, "mma_AtB: A and B must share K (their rows)");
  using Op = arch::Wgmma<typename mma_types<typename SA::element>::type, SB::cols>;
#pragma unroll
  for (int s = 0; s < SA::rows / kSliceK; ++s) {
    Op::template ss<1, 1>(registers<SB::cols>(acc), mn_major(a, s), mn_major(b, s), accumulate || s > 0);
  }
}

// acc (+)= A^T B^T: A stored K x 64 (MN-major), B N x K (K-major).
template <class Acc, class SA, class SB>
__device__ __forceinline__ void mma_AtBt(Acc& acc, const SA& a, const SB& b, bool accumulate = true) {
  static_assert(SA::cols == kRows, "mma_AtBt: A^T must have 64 rows (A stored K x 64)");
  static_assert(SA::rows == SB::cols, "mma_AtBt: A's rows and B's columns must both be K");
  using Op = arch::Wgmma<typename mma_types<typename SA::element>::type, SB::rows>;
#pragma unroll
  for (int s = 0; s < SA::rows / kSliceK; ++s) {
    Op::template ss<1, 0>(registers<SB::rows>(acc), mn_major(a, s), k_major(b, s), accumulate || s > 0);
  }
}

// A from registers (the RS form): each warp passes its 16 rows of A as a row-layout register
// tile, whose 16 x 16 subtiles are exactly wgmma's A fragment (tk/layout/rt_layout.hpp).
template <class T, int K>
__device__ __forceinline__ const std::uint32_t (&a_fragment(const rt<T, 16, K, row_l>& a, int s))[4] {
  return reinterpret_cast<const std::uint32_t(&)[4]>(a.data[s * layout::kPairsPerSubtile]);
}

// acc (+)= A B^T with A in registers (16 x K per warp) and B N x K in shared memory.
template <class Acc, class T, int K, class SB>
__device__ __forceinline__ void mma_ABt(Acc& acc, const rt<T, 16, K, row_l>& a, const SB& b, bool accumulate = true) {
  static_assert(K == SB::cols, "mma_ABt: A and B must share K (their columns)");
  using Op = arch::Wgmma<typename mma_types<T>::type, SB::rows>;
#pragma unroll
  for (int s = 0; s < K / kSliceK; ++s) {
    Op::rs(registers<SB::rows>(acc), a_fragment(a, s), k_major(b, s), accumulate || s > 0);
  }
}

// acc (+)= A B with A in registers (16 x K per warp) and B K x N (N contiguous) in shared memory.
template <class Acc, class T, int K, class SB>
__device__ __forceinline__ void mma_AB(Acc& acc, const rt<T, 16, K, row_l>& a, const SB& b, bool accumulate = true) {
  static_assert(K == SB::rows, "mma_AB: A's columns must be B's rows (K)");
  using Op = arch::Wgmma<typename mma_types<T>::type, SB::cols>;
#pragma unroll
  for (int s = 0; s < K / kSliceK; ++s) {
    Op::template rs<1>(registers<SB::cols>(acc), a_fragment(a, s), mn_major(b, s), accumulate || s > 0);
  }
}

__device__ __forceinline__ void mma_fence() { arch::wgmma_fence(); }
__device__ __forceinline__ void mma_commit() { arch::wgmma_commit(); }
template <int Pending>
__device__ __forceinline__ void mma_wait() {
  arch::wgmma_wait<Pending>();
}

}  // namespace tk::warpgroup
