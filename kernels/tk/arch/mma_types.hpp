#pragma once
// Tensor-core input/accumulator type pairs, named <inputs>_<accumulator>, shared by mma.sync
// and wgmma. Reg is what one accumulator register holds as C++ sees it: an f32, an s32, or a
// pair of f16 packed in 32 bits; acc_bytes is what one accumulator value occupies.
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

}  // namespace tk::arch
