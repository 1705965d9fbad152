#pragma once
// How wgmma reads an operand from shared memory: the 64-bit matrix descriptor (PTX ISA
// 9.7.15.5.1.2.2 "Matrix Descriptor Format") and the canonical layouts it describes (9.7.15.5.1.2
// "Shared Memory Matrix Layout"), as plain constexpr math. `tkprobe wgmma-layout` checks every
// mapping here against what the tensor cores really read.
#include <cstdint>

#include "tk/layout/swizzle.hpp"

namespace tk::layout {

// K-major: consecutive k of one row (of A) or column (of B) are adjacent in memory (no
// transpose); MN-major: consecutive m (or n) are (imm-trans-a/b = 1, 16-bit types only).
enum class Major { k, mn };

// An operand as a descriptor describes it. Leading and stride byte offsets (LBO, SBO) are the
// strides between 8x16-byte core matrices that the swizzle atom does not fix:
//   K-major:  SBO steps 8 rows of M/N; LBO steps the second 16 bytes of K (no swizzle only).
//   MN-major: SBO steps 8 rows of K (swizzled) or 16 bytes of M/N (no swizzle); LBO the other.
struct SmemOperand {
  Major major = Major::k;
  Swizzle swizzle = Swizzle::b128;
  std::uint32_t lbo = 0, sbo = 0;  // bytes
};

inline constexpr std::uint32_t kCoreRowBytes = 16;  // a core matrix is 8 rows of 16 bytes
inline constexpr int kCoreRows = 8;

// Bytes of one row of a swizzle atom: the swizzle span, or one 16-byte core-matrix row.
constexpr std::uint32_t atom_row_bytes(Swizzle mode) {
  return mode == Swizzle::none ? kCoreRowBytes : static_cast<std::uint32_t>(mode);
}

// Byte offset of element (mn, k) from the descriptor's start address, before the swizzle.
constexpr std::uint32_t canonical_offset(const SmemOperand& op, int mn, int k, int elem_bytes) {
  const int per_chunk = static_cast<int>(kCoreRowBytes) / elem_bytes;
  const std::uint32_t row_bytes = atom_row_bytes(op.swizzle);
  if (op.major == Major::k) {
    const std::uint32_t chunk = k / per_chunk;
    const std::uint32_t chunk_offset = op.swizzle == Swizzle::none ? chunk * op.lbo : chunk * kCoreRowBytes;
    return (mn / kCoreRows) * op.sbo + (mn % kCoreRows) * row_bytes + chunk_offset + (k % per_chunk) * elem_bytes;
  }
  const std::uint32_t chunk = mn / per_chunk, within = (mn % per_chunk) * elem_bytes;
  const std::uint32_t k_row = (k % kCoreRows) * row_bytes, k_group = k / kCoreRows;
  if (op.swizzle == Swizzle::none) return chunk * op.sbo + k_group * op.lbo + k_row + within;
  const std::uint32_t chunks_per_row = row_bytes / kCoreRowBytes;
  return (chunk / chunks_per_row) * op.lbo + k_group * op.sbo + k_row + (chunk % chunks_per_row) * kCoreRowBytes +
         within;
}

// The shared-memory byte address wgmma reads for element (mn, k). The swizzle XORs bits of
// the absolute address (as the TMA writes them), so a tile whose start is not aligned to the
// mode's repeat (1024 B for 128B) reads with the phase of where it sits, and advancing the
// start by 32 bytes of K inside a swizzled row stays correct. The descriptor's base offset
// (bits 49-51) is subtracted from the line index before the XOR: with the PTX ISA's
// (start >> 7) & 7 there, the pattern restarts at the start address. (Both measured by
// `tkprobe wgmma-layout` on an H200: 0 mismatches.)
constexpr std::uint32_t operand_address(std::uint32_t start, const SmemOperand& op, int mn, int k, int elem_bytes,
                                        std::uint32_t base_offset = 0) {
  const std::uint32_t linear = start + canonical_offset(op, mn, k, elem_bytes);
  const std::uint32_t mask = (1u << swizzle_bits(op.swizzle)) - 1u;
  return linear ^ ((((linear >> kLineShift) - base_offset) & mask) << kChunkShift);
}

// The strides of an mn_extent x k_extent tile stored as the TMA writes it, box after box: each
// box one swizzle span (16 bytes without swizzle) of the contiguous dimension by the whole of
// the other, its rows one span apart. This is the layout the DSL's shared tiles use. K-major
// swizzled rows hold all of K (k_extent x elem_bytes <= the span), so LBO is unused there and
// left at 16 (one unit).
constexpr SmemOperand packed_operand(Major major, Swizzle mode, int mn_extent, int k_extent) {
  const std::uint32_t span = atom_row_bytes(mode), group = kCoreRows * span;  // 8 rows of a box
  const std::uint32_t box = std::uint32_t(major == Major::k ? mn_extent : k_extent) * span;
  if (major == Major::k) return {major, mode, mode == Swizzle::none ? box : kCoreRowBytes, group};
  return mode == Swizzle::none ? SmemOperand{major, mode, group, box} : SmemOperand{major, mode, box, group};
}

// A descriptor's address fields hold bytes / 16 in 14 bits: they reach 2^18 bytes, all of a CTA's
// shared memory (228 KB on sm_90).
inline constexpr std::uint32_t kSharedAddressLimit = 1u << 18;
constexpr std::uint64_t descriptor_field(std::uint32_t bytes) { return (bytes & (kSharedAddressLimit - 1)) >> 4; }

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

inline constexpr int kBaseOffsetShift = 49;  // bits 49-51: the "matrix base offset"

// For a K-major operand under 128B swizzle: rows of 128 bytes, 8-row atoms of 1024 bytes
// (stride_bytes = 1024); the leading offset is unused while one instruction's K (32 bytes)
// stays inside a row. Advancing K by 32 bytes adds 2 to the descriptor (32 >> 4).
constexpr std::uint64_t wgmma_descriptor(std::uint32_t smem_address, std::uint32_t leading_bytes,
                                         std::uint32_t stride_bytes, Swizzle mode, std::uint32_t base_offset = 0) {
  return descriptor_field(smem_address) | descriptor_field(leading_bytes) << 16 |
         descriptor_field(stride_bytes) << 32 | std::uint64_t(base_offset & 7u) << kBaseOffsetShift |
         descriptor_swizzle_code(mode) << 62;
}

constexpr std::uint64_t wgmma_descriptor(std::uint32_t smem_address, const SmemOperand& op,
                                         std::uint32_t base_offset = 0) {
  return wgmma_descriptor(smem_address, op.lbo, op.sbo, op.swizzle, base_offset);
}

// A descriptor moved on by `bytes` (a multiple of 16, the address staying below kSharedAddressLimit)
// is the descriptor plus bytes / 16, with no carry out of the start-address field. One 64-bit add
// per K slice where building each slice's descriptor from its address took a dozen instructions
// between two wgmma (docs/decisions/010-wgmma-descriptor-advance.md).
constexpr std::uint64_t advance(std::uint64_t descriptor, std::uint32_t bytes) { return descriptor + (bytes >> 4); }

}  // namespace tk::layout
