#pragma once
// A global tensor (a batch of matrices) as the TMA sees it: a CUtensorMap whose box is one box of a shared tile
// type (tk/types/st.cuh), so loading a tile is one bulk tensor copy per box. Host side; the
// driver's encoder is reached through the runtime (cudaGetDriverEntryPointByVersion), so
// nothing links libcuda.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "tk/types/st.cuh"

namespace tk {

template <class T>
constexpr CUtensorMapDataType tma_type() {
  if constexpr (sizeof(T) == 4) return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  if constexpr (sizeof(T) == 2) return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;  // the bits move as they are
  return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

constexpr CUtensorMapSwizzle tma_swizzle(layout::Swizzle s) {
  return s == layout::Swizzle::b128  ? CU_TENSOR_MAP_SWIZZLE_128B
         : s == layout::Swizzle::b64 ? CU_TENSOR_MAP_SWIZZLE_64B
         : s == layout::Swizzle::b32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                     : CU_TENSOR_MAP_SWIZZLE_NONE;
}

inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const auto fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      throw std::runtime_error("the CUDA driver has no cuTensorMapEncodeTiled");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

// The map for `depth` row-major rows x cols matrices stored one after the other at `data` (a
// batch of them, or one with depth 1), read in tiles of type ST (one box = ST's rows x one
// swizzle span of columns, one matrix deep). The TMA fills what a box reads past a matrix's
// rows or columns with zeros and drops what a store writes there, so tiles may overhang the
// edges. Throws, naming the driver's result, if the map is refused.
template <class ST, int Rank>
CUtensorMap encode_map(const typename ST::element* data, const cuuint64_t (&dims)[Rank],
                       const cuuint64_t (&byte_strides)[Rank - 1]) {
  using T = typename ST::element;
  CUtensorMap map;
  cuuint32_t box[Rank], element_strides[Rank];
  for (int i = 0; i < Rank; ++i) box[i] = element_strides[i] = 1;
  box[0] = ST::box_cols;
  box[1] = ST::rows;
  const CUresult r = tensor_map_encoder()(&map, tma_type<T>(), Rank, const_cast<T*>(data), dims, byte_strides, box,
                                          element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, tma_swizzle(ST::swizzle),
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled refused the map: CUresult " + std::to_string(r));
  return map;
}

template <class ST>
CUtensorMap tma_map(const typename ST::element* data, std::uint64_t rows, std::uint64_t cols, std::uint64_t depth = 1) {
  using T = typename ST::element;
  return encode_map<ST, 3>(data, {cols, rows, depth}, {cols * sizeof(T), rows * cols * sizeof(T)});
}

// A grid of rows x cols matrices, [outer][inner] (an attention tensor's batches and heads), each
// axis with a stride of its own, so a tensor PyTorch hands over transposed is read where it lies:
// a 4-D map. Kernels name a matrix by one number m, as with a 3-D map's depth; it is matrix
// (m / inner, m % inner).
struct grid_map {
  CUtensorMap map;
  int inner;
};

// The matrix that number m names in grid g. A loop over one matrix's tiles works it out once,
// before the loop: ptxas redoes the division for every load, which the TMA's asm orders after
// memory it may write (the forward's producer: 88 instructions a tile, 57 with it hoisted).
struct grid_matrix {
  int inner, outer;
};
__host__ __device__ inline grid_matrix matrix_of(const grid_map& g, int m) { return {m % g.inner, m / g.inner}; }

// A grid's element strides: between rows, inner matrices and outer matrices. Columns are
// contiguous; the TMA needs each stride in bytes to be a multiple of 16 and the base 16-byte
// aligned (cuTensorMapEncodeTiled's rules), which callers check first to say so in their terms.
struct grid_strides {
  std::uint64_t row, inner, outer;
};

template <class ST>
grid_map tma_map(const typename ST::element* data, std::uint64_t rows, std::uint64_t cols, std::uint64_t inner,
                 std::uint64_t outer, grid_strides s) {
  constexpr std::uint64_t bytes = sizeof(typename ST::element);
  return {encode_map<ST, 4>(data, {cols, rows, inner, outer}, {s.row * bytes, s.inner * bytes, s.outer * bytes}),
          int(inner)};
}

}  // namespace tk
