#pragma once
// Loading and storing shared tiles with the TMA: one thread issues one bulk tensor copy per box
// of the tile (tk/types/gl.cuh made the map with that box). Loads complete on `bar`, armed with
// bytes<ST>() per tile; stores are tracked in the issuing thread's bulk groups.
#include "tk/arch/shared_memory.cuh"
#include "tk/arch/tma.cuh"
#include "tk/types/gl.cuh"
#include "tk/types/st.cuh"
#include "tk/types/sv.cuh"

namespace tk::tma {

template <class ST>
constexpr std::uint32_t bytes() {
  return ST::bytes;
}

// Tile (row_tile, col_tile) of matrix `depth` of the tensor, in units of the tile's own rows and
// columns.
template <class ST>
__device__ __forceinline__ void load_async(ST& dst, const CUtensorMap& map, int row_tile, int col_tile,
                                           std::uint32_t bar, int depth = 0) {
  const std::uint32_t base = arch::shared_address(dst.data);
#pragma unroll
  for (int b = 0; b < ST::boxes; ++b) {
    arch::tma_load_3d(base + b * ST::box_bytes, map, col_tile * ST::cols + b * ST::box_cols, row_tile * ST::rows, depth,
                      bar);
  }
}

// The same from matrix `m` of a grid of matrices (tk/types/gl.cuh).
template <class ST>
__device__ __forceinline__ void load_async(ST& dst, const grid_map& grid, int row_tile, int col_tile, std::uint32_t bar,
                                           grid_matrix m) {
  const std::uint32_t base = arch::shared_address(dst.data);
#pragma unroll
  for (int b = 0; b < ST::boxes; ++b) {
    arch::tma_load_4d(base + b * ST::box_bytes, grid.map, col_tile * ST::cols + b * ST::box_cols, row_tile * ST::rows,
                      m.inner, m.outer, bar);
  }
}
template <class ST>
__device__ __forceinline__ void load_async(ST& dst, const grid_map& grid, int row_tile, int col_tile, std::uint32_t bar,
                                           int m) {
  load_async(dst, grid, row_tile, col_tile, bar, matrix_of(grid, m));
}

// Shared vector `dst` from N contiguous elements at `src` (16-byte aligned): one bulk copy
// (PTX ISA 9.7.9.25.4.1 "cp.async.bulk"), completing on `bar` like a tile's boxes, armed with
// bytes<SV>(). Unlike a tensor map's box it has no edge: all N elements must exist.
template <class T, int N>
__device__ __forceinline__ void load_async(sv<T, N>& dst, const T* src, std::uint32_t bar) {
  arch::bulk_load(arch::shared_address(dst.data), src, sv<T, N>::bytes, bar);
}

// Stores the tile to tile (row_tile, col_tile) of matrix `depth`, one bulk group per call. Every
// thread that wrote the tile must have called arch::fence_proxy_async() and synchronised with
// the issuing thread first. The tile may be rewritten, and the global writes are done, once
// store_wait<0>() returns.
template <class ST>
__device__ __forceinline__ void store_async(const CUtensorMap& map, const ST& src, int row_tile, int col_tile,
                                           int depth = 0) {
  const std::uint32_t base = arch::shared_address(src.data);
#pragma unroll
  for (int b = 0; b < ST::boxes; ++b) {
    arch::tma_store_3d(map, col_tile * ST::cols + b * ST::box_cols, row_tile * ST::rows, depth, base + b * ST::box_bytes);
  }
  arch::bulk_commit();
}

// The same into a grid of matrices, as load_async names them.
template <class ST>
__device__ __forceinline__ void store_async(const grid_map& grid, const ST& src, int row_tile, int col_tile, int depth) {
  const std::uint32_t base = arch::shared_address(src.data);
  const grid_matrix m = matrix_of(grid, depth);
#pragma unroll
  for (int b = 0; b < ST::boxes; ++b) {
    arch::tma_store_4d(grid.map, col_tile * ST::cols + b * ST::box_cols, row_tile * ST::rows, m.inner, m.outer,
                       base + b * ST::box_bytes);
  }
  arch::bulk_commit();
}

// The tile of every store but the last `Pending` may be rewritten (the copy engine has read it);
// the global writes may still be in flight.
template <int Pending>
__device__ __forceinline__ void store_wait_read() {
  arch::bulk_wait_read<Pending>();
}

template <int Pending>
__device__ __forceinline__ void store_wait() {
  arch::bulk_wait<Pending>();
}

}  // namespace tk::tma
