#pragma once
// mma.sync (PTX ISA 9.7.13): one warp multiplies a 16xK tile of A by a Kx8 tile of B into
// 16x8 accumulators, every operand in registers (tk/layout/fragments.hpp has the layouts):
// m16n8k16 for f16/bf16, m16n8k8 for tf32, m16n8k32 for e4m3 (sm_89 and newer) and s8.
//
//   tk::arch::MmaSync<tk::arch::bf16_f32>::mma(acc, a, b);   // acc += a * b
#include <cstdint>

#include "tk/arch/mma_types.hpp"

namespace tk::arch {

template <class Types>
struct MmaSync;

#define TK_MMA_SYNC_DEFINE(Types, Bind, instr)                                                            \
  template <>                                                                                             \
  struct MmaSync<Types> {                                                                                 \
    __device__ __forceinline__ static void mma(Types::Reg (&d)[4], const std::uint32_t (&a)[4],          \
                                               const std::uint32_t (&b)[2]) {                             \
      asm volatile(instr " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"              \
                   : Bind(d[0]), Bind(d[1]), Bind(d[2]), Bind(d[3])                                       \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));                   \
    }                                                                                                     \
  };
#define TK_MMA_BIND_F(x) "+f"(x)
#define TK_MMA_BIND_R(x) "+r"(x)

TK_MMA_SYNC_DEFINE(bf16_f32, TK_MMA_BIND_F, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")
TK_MMA_SYNC_DEFINE(f16_f32, TK_MMA_BIND_F, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
TK_MMA_SYNC_DEFINE(tf32_f32, TK_MMA_BIND_F, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
TK_MMA_SYNC_DEFINE(e4m3_f32, TK_MMA_BIND_F, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32")
TK_MMA_SYNC_DEFINE(s8_s32, TK_MMA_BIND_R, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32")

#undef TK_MMA_SYNC_DEFINE
#undef TK_MMA_BIND_F
#undef TK_MMA_BIND_R

}  // namespace tk::arch
