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
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "tk/arch/mma_types.hpp"
#include "tk/arch/shared_memory.cuh"
#include "tk/arch/wgmma.cuh"
#include "tk/types/rt.cuh"
#include "tk/types/rt_fp8.cuh"
#include "tk/types/st.cuh"

namespace tk::warpgroup {

inline constexpr int kRows = 64;     // a warpgroup's accumulator rows (m64)
inline constexpr int kSliceK = 16;   // K of one wgmma for 16-bit inputs
// K of one wgmma for inputs of type T: 32 bytes of each row (16 for 16-bit types, 32 for e4m3).
template <class T>
inline constexpr int kSliceKOf = 32 / int(sizeof(T));

// Where K slice `s` of tile type ST starts, in bytes from the tile's start, as a K-major operand
// (rows M or N, columns K) or as an MN-major one (K rows x N columns, N contiguous).
template <layout::Major M, class ST>
constexpr std::uint32_t slice_offset(int s) {
  if constexpr (M == layout::Major::k) {
    const int col = s * kSliceKOf<typename ST::element>;
    return col / ST::box_cols * ST::box_bytes + col % ST::box_cols * sizeof(typename ST::element);
  } else {
    return s * kSliceK * ST::span;
  }
}

// Tile `t`'s descriptor as an operand of major M, at K slice 0; slice s is layout::advance(it,
// slice_offset<M, ST>(s)).
template <layout::Major M, class ST>
__device__ __forceinline__ std::uint64_t operand(const ST& t) {
  if constexpr (M == layout::Major::k) return layout::wgmma_descriptor(arch::shared_address(t.data), ST::operand());
  return layout::wgmma_descriptor(arch::shared_address(t.data),
                                  layout::packed_operand(layout::Major::mn, ST::swizzle, ST::cols, ST::rows));
}

// The warp's 16 x N slice of the accumulator as wgmma's registers (same order: tk/types/rt.cuh).
template <int N, class Acc>
__device__ __forceinline__ float (&registers(Acc& acc))[N / 2] {
  static_assert(sizeof(Acc) == N / 2 * sizeof(float), "the accumulator must be each warp's 16 x N float tile");
  return reinterpret_cast<float(&)[N / 2]>(acc);
}

// A from registers (the RS form): each warp passes its 16 rows of A as a row-layout register
// tile, whose 16 x 16 subtiles are exactly wgmma's A fragment (tk/layout/rt_layout.hpp).
template <class T, int K>
__device__ __forceinline__ const std::uint32_t (&a_fragment(const rt<T, 16, K, row_l>& a, int s))[4] {
  return reinterpret_cast<const std::uint32_t(&)[4]>(a.data[s * layout::kPairsPerSubtile]);
}

// The same for an e4m3 tile (tk/types/rt_fp8.cuh): its registers are the k32 fragment already.
template <int K>
__device__ __forceinline__ const std::uint32_t (&a_fragment(const rt_e4m3<K>& a, int s))[4] {
  return a.data[s];
}

template <class A>
inline constexpr bool in_registers = requires { typename A::tile_layout; };

// A's part of the 64-row product: a 64-row shared tile, or each warp's 16-row row_l register tile.
template <class A>
constexpr bool warpgroup_rows() {
  if constexpr (in_registers<A>) return A::rows == 16 && A::row_major;
  return A::rows == kRows;
}

// The loop every form shares: one wgmma per 16 of K (32 for e4m3: kSliceKOf), A read with major MA (from shared memory)
// or from registers, B with major MB; the first overwrites acc unless accumulate.
template <int N, int K, layout::Major MA, layout::Major MB, class Acc, class A, class SB>
__device__ __forceinline__ void mma_slices(Acc& acc, const A& a, const SB& b, bool accumulate) {
  using Op = arch::Wgmma<arch::f32_accumulate_t<typename A::element>, N>;
  constexpr int trans_a = MA == layout::Major::mn, trans_b = MB == layout::Major::mn;
  const std::uint64_t b0 = operand<MB>(b);
#pragma unroll
  for (int s = 0; s < K / kSliceKOf<typename A::element>; ++s) {
    const std::uint64_t b_s = layout::advance(b0, slice_offset<MB, SB>(s));
    if constexpr (in_registers<A>) {
      Op::template rs<trans_b>(registers<N>(acc), a_fragment(a, s), b_s, accumulate || s > 0);
    } else {
      const std::uint64_t a_s = layout::advance(operand<MA>(a), slice_offset<MA, A>(s));
      Op::template ss<trans_a, trans_b>(registers<N>(acc), a_s, b_s, accumulate || s > 0);
    }
  }
}

// acc (+)= A B^T: A 64 x K (a shared tile, or each warp's 16 x K register tile), B N x K; both
// K-major. accumulate = false overwrites acc.
template <class Acc, class A, class SB>
__device__ __forceinline__ void mma_ABt(Acc& acc, const A& a, const SB& b, bool accumulate = true) {
  static_assert(warpgroup_rows<A>(), "mma_ABt: A must be a 64-row shared tile or a 16-row row_l register tile");
  static_assert(A::cols == SB::cols, "mma_ABt: A and B must share K (their columns)");
  mma_slices<SB::rows, A::cols, layout::Major::k, layout::Major::k>(acc, a, b, accumulate);
}

// acc (+)= A B: A as for mma_ABt (K-major), B K x N with N contiguous (MN-major, imm-trans-b).
template <class Acc, class A, class SB>
__device__ __forceinline__ void mma_AB(Acc& acc, const A& a, const SB& b, bool accumulate = true) {
  static_assert(warpgroup_rows<A>(), "mma_AB: A must be a 64-row shared tile or a 16-row row_l register tile");
  static_assert(A::cols == SB::rows, "mma_AB: A's columns must be B's rows (K)");
  mma_slices<SB::cols, A::cols, layout::Major::k, layout::Major::mn>(acc, a, b, accumulate);
}

// acc (+)= A^T B: A stored K x 64 (M contiguous: MN-major, imm-trans-a), B K x N (N contiguous).
template <class Acc, class SA, class SB>
__device__ __forceinline__ void mma_AtB(Acc& acc, const SA& a, const SB& b, bool accumulate = true) {
  static_assert(SA::cols == kRows, "mma_AtB: A^T must have 64 rows (A stored K x 64)");
  static_assert(SA::rows == SB::rows, "mma_AtB: A and B must share K (their rows)");
  mma_slices<SB::cols, SA::rows, layout::Major::mn, layout::Major::mn>(acc, a, b, accumulate);
}

// acc (+)= A^T B^T: A stored K x 64 (MN-major), B N x K (K-major).
template <class Acc, class SA, class SB>
__device__ __forceinline__ void mma_AtBt(Acc& acc, const SA& a, const SB& b, bool accumulate = true) {
  static_assert(SA::cols == kRows, "mma_AtBt: A^T must have 64 rows (A stored K x 64)");
  static_assert(SA::rows == SB::cols, "mma_AtBt: A's rows and B's columns must both be K");
  mma_slices<SB::rows, SA::rows, layout::Major::mn, layout::Major::k>(acc, a, b, accumulate);
}

namespace detail {
// An empty asm that reads and writes each of a register tile's 32-bit registers.
template <class Tile>
__device__ __forceinline__ void pin_registers(Tile& t) {
  static_assert(sizeof(t.data[0]) == 4, "pin_registers: a register A operand's registers are 32 bits");
#pragma unroll
  for (auto& pair : t.data) asm volatile("" : "+r"(reinterpret_cast<std::uint32_t&>(pair)));
}
}  // namespace detail

// wgmma.fence (PTX ISA 9.7.15.6), after the register A operands given are pinned: an empty asm that
// reads and writes each of their registers, so the instructions that build them (bf16 packing)
// cannot sink below the fence. A register written after the fence makes ptxas add its own
// warpgroup.arrive before the product, and one that lands in a divergent branch serialises every
// wgmma of the kernel (C7520: kernels/tk/DESIGN.md, "When ptxas serialises wgmma").
template <class... RegisterOperands>
__device__ __forceinline__ void mma_fence(RegisterOperands&... a) {
  (detail::pin_registers(a), ...);
  arch::wgmma_fence();
}
__device__ __forceinline__ void mma_commit() { arch::wgmma_commit(); }
template <int Pending>
__device__ __forceinline__ void mma_wait() {
  arch::wgmma_wait<Pending>();
}

}  // namespace tk::warpgroup
