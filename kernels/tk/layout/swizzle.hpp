#pragma once
// Hopper's shared-memory swizzle modes as plain constexpr byte-offset math, usable on the host
// (tests, models) and the device (kernels). A mode of S bytes XORs the 16-byte chunk index
// within an S-byte row with the row index (mod S/16), where a "row" is each 128-byte line:
// bits [4, 4+b) ^= bits [7, 7+b) with b = log2(S/16) (PTX ISA, "Tensor Map" swizzle modes and
// the wgmma shared-memory matrix layouts; the same rule CUTLASS writes Swizzle<b,4,3>).
#include <cstdint>

namespace tk::layout {

enum class Swizzle : std::uint32_t { none = 0, b32 = 32, b64 = 64, b128 = 128 };

// Number of chunk-index bits a mode permutes: 0, 1, 2 or 3.
constexpr std::uint32_t swizzle_bits(Swizzle mode) {
  switch (mode) {
    case Swizzle::b32:
      return 1;
    case Swizzle::b64:
      return 2;
    case Swizzle::b128:
      return 3;
    default:
      return 0;
  }
}

inline constexpr std::uint32_t kChunkShift = 4;  // 16-byte chunks
inline constexpr std::uint32_t kLineShift = 7;   // 128-byte lines

// The swizzled byte offset of `offset` (relative to a base aligned to the mode's repeat,
// 8 lines x 128 B = 1024 B for 128B mode). The map is its own inverse.
constexpr std::uint32_t swizzle(std::uint32_t offset, Swizzle mode) {
  const std::uint32_t mask = (1u << swizzle_bits(mode)) - 1u;
  return offset ^ (((offset >> kLineShift) & mask) << kChunkShift);
}

// Bytes between a TMA box's rows in shared memory. Without swizzle rows are packed; under a
// swizzle mode each row takes the whole span even when the box is narrower (measured by
// `tkprobe tma-swizzle --box` on an H200: a 64 B-wide box under 128B lands 128 B apart).
constexpr std::uint32_t tma_row_pitch(std::uint32_t inner_bytes, Swizzle mode) {
  const auto span = static_cast<std::uint32_t>(mode);
  return mode == Swizzle::none || inner_bytes > span ? inner_bytes : span;
}

}  // namespace tk::layout
