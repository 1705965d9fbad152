#pragma once
// Tensor-core input/accumulator type pairs, named <inputs>_<accumulator>, shared by mma.sync
// and wgmma. Reg is what one accumulator register holds as C++ sees it: an f32, an s32, or a
// pair of f16 packed in 32 bits; acc_bytes is what one accumulator value occupies.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace tk::arch {

struct bf16_f32 { using Reg = float; static constexpr int acc_bytes = 4; };
struct f16_f32 { using Reg = float; static constexpr int acc_bytes = 4; };
struct f16_f16 { using Reg = std::uint32_t; static constexpr int acc_bytes = 2; };
struct tf32_f32 { using Reg = float; static constexpr int acc_bytes = 4; };
struct e4m3_f32 { using Reg = float; static constexpr int acc_bytes = 4; };
struct e4m3_f16 { using Reg = std::uint32_t; static constexpr int acc_bytes = 2; };
struct e5m2_f32 { using Reg = float; static constexpr int acc_bytes = 4; };
struct e5m2_f16 { using Reg = std::uint32_t; static constexpr int acc_bytes = 2; };
struct s8_s32 { using Reg = std::int32_t; static constexpr int acc_bytes = 4; };

// The pair a 16-bit input type (or e4m3, at warpgroup scope) multiplies as, into f32 (the DSL's mma at both scopes).
template <class T>
struct f32_accumulate;
template <>
struct f32_accumulate<__nv_bfloat16> {
  using type = bf16_f32;
};
template <>
struct f32_accumulate<__half> {
  using type = f16_f32;
};
template <>
struct f32_accumulate<__nv_fp8_e4m3> {
  using type = e4m3_f32;
};
template <class T>
using f32_accumulate_t = typename f32_accumulate<T>::type;

}  // namespace tk::arch
