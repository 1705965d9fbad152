#pragma once
// Loading shared tiles with the TMA: one thread issues one bulk tensor copy per box of the tile
// (tk/types/gl.cuh made the map with that box); the copies complete on `bar`, armed with
// bytes<ST>() per tile.
#include "tk/arch/shared_memory.cuh"
#include "tk/arch/tma.cuh"
#include "tk/types/st.cuh"

namespace tk::tma {

template <class ST>
constexpr std::uint32_t bytes() {
  return ST::bytes;
}

// Tile (row_tile, col_tile) of the tensor, in units of the tile's own rows and columns.
template <class ST>
__device__ __forceinline__ void load_async(ST& dst, const CUtensorMap& map, int row_tile, int col_tile,
                                           std::uint32_t bar) {
  const std::uint32_t base = arch::shared_address(dst.data);
#pragma unroll
  for (int b = 0; b < ST::boxes; ++b) {
    arch::tma_load_2d(base + b * ST::box_bytes, map, col_tile * ST::cols + b * ST::box_cols, row_tile * ST::rows, bar);
  }
}

}  // namespace tk::tma
