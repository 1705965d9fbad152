#pragma once
// st<T, R, C>: a shared-memory tile of R x C elements, stored as the TMA writes it and wgmma reads
// it (tk/layout/wgmma_descriptor.hpp, decoded from the hardware by `tkprobe wgmma-layout`): boxes
// one swizzle span wide (the widest of 128/64/32 bytes that divides a row), all R rows each, rows
// one span apart, every box swizzled. Rows are the M (or N) dimension and columns K for a K-major
// operand. Declare tiles inside a struct in dynamic shared memory aligned to kSmemAlign.
#include <cstdint>

#include "tk/arch/shared_memory.cuh"
#include "tk/layout/swizzle.hpp"
#include "tk/layout/wgmma_descriptor.hpp"

namespace tk {

inline constexpr int kTileUnit = 16;       // every tile dimension is a multiple of 16
inline constexpr int kSmemAlign = 1024;    // the 128B swizzle repeats every 1024 bytes
// The most dynamic shared memory a block may opt in to on sm_90 (CUDA C++ Programming Guide,
// "Technical Specifications per Compute Capability": 227 KB).
inline constexpr int kMaxSmemBytes = 227 * 1024;

// The struct of tiles `Smem` at the start of dynamic shared memory `raw`, rounded up to
// kSmemAlign: the kernel asks for sizeof(Smem) + kSmemAlign bytes.
template <class Smem>
__device__ __forceinline__ Smem& aligned_smem(std::uint8_t* raw) {
  return *reinterpret_cast<Smem*>(raw + (kSmemAlign - arch::shared_address(raw) % kSmemAlign) % kSmemAlign);
}

// The widest swizzle whose span divides a row of `row_bytes`.
constexpr layout::Swizzle swizzle_for_row(int row_bytes) {
  return row_bytes % 128 == 0 ? layout::Swizzle::b128
         : row_bytes % 64 == 0 ? layout::Swizzle::b64
         : row_bytes % 32 == 0 ? layout::Swizzle::b32
                               : layout::Swizzle::none;
}

template <class T, int R, int C>
struct alignas(kSmemAlign) st {
  static_assert(R % kTileUnit == 0 && C % kTileUnit == 0, "st<T, R, C>: R and C must be multiples of 16");
  using element = T;
  static constexpr int rows = R, cols = C;
  static constexpr int row_bytes = C * int(sizeof(T));
  static constexpr layout::Swizzle swizzle = swizzle_for_row(row_bytes);
  static constexpr int span = int(layout::atom_row_bytes(swizzle));  // bytes of a row in one box
  static constexpr int box_cols = span / int(sizeof(T));            // columns per box
  static constexpr int boxes = row_bytes / span;
  static constexpr int box_bytes = R * span;
  static constexpr int bytes = R * row_bytes;

  // Byte offset of element (r, c) from the tile's start (which sits on a kSmemAlign boundary).
  static constexpr std::uint32_t offset(int r, int c) {
    const int box = c / box_cols, in_box = (c % box_cols) * int(sizeof(T));
    return std::uint32_t(box) * box_bytes + layout::swizzle(std::uint32_t(r * span + in_box), swizzle);
  }
  // The descriptor layout of the tile as a K-major wgmma operand (rows M or N, columns K).
  static constexpr layout::SmemOperand operand() {
    return layout::packed_operand(layout::Major::k, swizzle, R, C);
  }

  __device__ T& operator()(int r, int c) { return *reinterpret_cast<T*>(data + offset(r, c)); }
  __device__ const T& operator()(int r, int c) const { return *reinterpret_cast<const T*>(data + offset(r, c)); }

  std::uint8_t data[bytes];
};

}  // namespace tk
