#pragma once
// wgmma.mma_async (PTX ISA 9.7.15): one warpgroup (128 threads) multiplies a 64xK tile of A
// by a KxN tile of B into 64xN accumulators held in its registers. B always comes from shared
// memory through a matrix descriptor (tk/layout/wgmma_descriptor.hpp); A from shared memory
// too ("SS") or from registers ("RS", tk/layout/fragments.hpp says which thread holds what).
//
//   tk::arch::Wgmma<tk::arch::bf16_f32, 256>::ss(acc, desc_a, desc_b, /*accumulate=*/1);
//
// Operands are K-major unless a 16-bit type asks for MN-major (ss<1, 1>): the only form every
// input type allows is K-major.
#include <cstdint>

#include "tk/arch/asm_lists.inc"
#include "tk/arch/mma_types.hpp"

namespace tk::arch {

// Accumulator registers per thread for m64nN: 64*N values over 128 threads.
template <class Types, int N>
inline constexpr int kAccRegs = 64 * N * Types::acc_bytes / 4 / 128;

template <class Types, int N>
struct Wgmma;  // specialised below for every N the PTX ISA allows for Types

// Orders this warpgroup's register and shared-memory writes before the wgmma that follow
// (required before the first wgmma and after touching accumulators or A registers).
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(Pending) : "memory");
}

}  // namespace tk::arch

// The instruction text for A from shared memory and from registers. scale-d (0: D = A*B,
// 1: D += A*B) is a predicate in PTX, set from an int operand. `tail(ta, tb)` writes the
// immediates after scale-d from the placeholders of the transpose operands.
#define TK_WGMMA_SS_TEXT(acc, a, b, scale, ta, tb, in6, in7, instr, tail)                                 \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " scale ", 0;\n" instr " {" acc "}, " a ", " b ", p" tail(ta, tb) \
  ";\n}"
#define TK_WGMMA_RS_TEXT(acc, a0, a1, a2, a3, b, scale, tb, instr, tail)                                  \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " scale ", 0;\n" instr " {" acc "}, {" a0 ", " a1 ", " a2 ", " a3 \
  "}, " b ", p" tail(tb, tb) ";\n}"
#define TK_BIND_F(x) "+f"(x)
#define TK_BIND_R(x) "+r"(x)

// The immediates after scale-d: scale-a and scale-b (+1: no negation) for float types, then for
// 16-bit types the transpose flags (imm-trans-a only where A comes from shared memory).
#define TK_TAIL_TRANS_SS(ta, tb) ", 1, 1, " ta ", " tb
#define TK_TAIL_TRANS_RS(ta, tb) ", 1, 1, " tb
#define TK_TAIL_SCALE(ta, tb) ", 1, 1"
#define TK_TAIL_NONE(ta, tb) ""

// One Wgmma<Types, N> with its two forms. TransA / TransB = 1 read A M-major / B N-major from
// shared memory (PTX ISA 9.7.15.5.1.2 "Shared Memory Matrix Layout"); only 16-bit inputs allow it.
#define TK_WGMMA_DEFINE(N, C, Types, Bind, shape_types, ss_tail, rs_tail, transposable)                       \
  template <>                                                                                                \
  struct tk::arch::Wgmma<tk::arch::Types, N> {                                                               \
    using Reg = tk::arch::Types::Reg;                                                                        \
    template <int TransA = 0, int TransB = 0>                                                                \
    __device__ __forceinline__ static void ss(Reg (&d)[C], std::uint64_t a, std::uint64_t b, int scale_d) { \
      static_assert(transposable || (TransA == 0 && TransB == 0), "only 16-bit inputs may be MN-major");     \
      asm volatile(TK_ASM_ACC_##C(TK_WGMMA_SS_TEXT, "wgmma.mma_async.sync.aligned.m64n" #N shape_types, ss_tail) \
                   : TK_ASM_OPERANDS_##C(Bind, d)                                                            \
                   : "l"(a), "l"(b), "r"(scale_d), "n"(TransA), "n"(TransB));                                \
    }                                                                                                        \
    template <int TransB = 0>                                                                                \
    __device__ __forceinline__ static void rs(Reg (&d)[C], const std::uint32_t (&a)[4], std::uint64_t b,     \
                                              int scale_d) {                                                 \
      static_assert(transposable || TransB == 0, "only 16-bit inputs may be MN-major");                      \
      asm volatile(TK_ASM_ACC_##C(TK_WGMMA_RS_TEXT, "wgmma.mma_async.sync.aligned.m64n" #N shape_types, rs_tail) \
                   : TK_ASM_OPERANDS_##C(Bind, d)                                                            \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d), "n"(TransB));         \
    }                                                                                                        \
  };

// X(N, N/2, N/4, ...) picks the accumulator count: N/2 registers of f32 or s32, N/4 of f16x2.
#define TK_WGMMA_F32(N, C32, C16, T, s) TK_WGMMA_DEFINE(N, C32, T, TK_BIND_F, s, TK_TAIL_SCALE, TK_TAIL_SCALE, false)
#define TK_WGMMA_F32_16BIT(N, C32, C16, T, s) \
  TK_WGMMA_DEFINE(N, C32, T, TK_BIND_F, s, TK_TAIL_TRANS_SS, TK_TAIL_TRANS_RS, true)
#define TK_WGMMA_F16(N, C32, C16, T, s) TK_WGMMA_DEFINE(N, C16, T, TK_BIND_R, s, TK_TAIL_SCALE, TK_TAIL_SCALE, false)
#define TK_WGMMA_F16_16BIT(N, C32, C16, T, s) \
  TK_WGMMA_DEFINE(N, C16, T, TK_BIND_R, s, TK_TAIL_TRANS_SS, TK_TAIL_TRANS_RS, true)
#define TK_WGMMA_S32(N, C32, C16, T, s) TK_WGMMA_DEFINE(N, C32, T, TK_BIND_R, s, TK_TAIL_NONE, TK_TAIL_NONE, false)

TK_WGMMA_N_ALL(TK_WGMMA_F32_16BIT, bf16_f32, "k16.f32.bf16.bf16")
TK_WGMMA_N_ALL(TK_WGMMA_F32_16BIT, f16_f32, "k16.f32.f16.f16")
TK_WGMMA_N_ALL(TK_WGMMA_F16_16BIT, f16_f16, "k16.f16.f16.f16")
TK_WGMMA_N_ALL(TK_WGMMA_F32, tf32_f32, "k8.f32.tf32.tf32")
TK_WGMMA_N_ALL(TK_WGMMA_F32, e4m3_f32, "k32.f32.e4m3.e4m3")
TK_WGMMA_N_ALL(TK_WGMMA_F16, e4m3_f16, "k32.f16.e4m3.e4m3")
TK_WGMMA_N_ALL(TK_WGMMA_F32, e5m2_f32, "k32.f32.e5m2.e5m2")
TK_WGMMA_N_ALL(TK_WGMMA_F16, e5m2_f16, "k32.f16.e5m2.e5m2")
TK_WGMMA_N_S8(TK_WGMMA_S32, s8_s32, "k32.s32.s8.s8")
