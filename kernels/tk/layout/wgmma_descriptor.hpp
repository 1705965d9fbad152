#pragma once
// The 64-bit shared-memory matrix descriptor wgmma reads its shared operands through (PTX ISA
// 9.7.15.5.1.2 "Matrix Descriptor Format"): start address, leading- and stride-dimension byte
// offsets, each stored >> 4 in 14 bits, and the swizzle mode in bits 62-63.
#include <cstdint>

#include "tk/layout/swizzle.hpp"

namespace tk::layout {

constexpr std::uint64_t descriptor_field(std::uint32_t bytes) { return (bytes & 0x3FFFFu) >> 4; }

// Bits 62-63: 0 none (interleaved), 1 128B, 2 64B, 3 32B.
constexpr std::uint64_t descriptor_swizzle_code(Swizzle mode) {
  switch (mode) {
    case Swizzle::b128:
      return 1;
    case Swizzle::b64:
      return 2;
    case Swizzle::b32:
      return 3;
    default:
      return 0;
  }
}

// For a K-major operand under 128B swizzle: rows of 128 bytes, 8-row atoms of 1024 bytes
// (stride_bytes = 1024); the leading offset is unused while one instruction's K (32 bytes)
// stays inside a row. Advancing K by 32 bytes adds 2 to the descriptor (32 >> 4).
constexpr std::uint64_t wgmma_descriptor(std::uint32_t smem_address, std::uint32_t leading_bytes,
                                         std::uint32_t stride_bytes, Swizzle mode) {
  return descriptor_field(smem_address) | descriptor_field(leading_bytes) << 16 |
         descriptor_field(stride_bytes) << 32 | descriptor_swizzle_code(mode) << 62;
}

}  // namespace tk::layout
