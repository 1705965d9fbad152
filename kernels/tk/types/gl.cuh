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
template <class ST>
CUtensorMap tma_map(const typename ST::element* data, std::uint64_t rows, std::uint64_t cols, std::uint64_t depth = 1) {
  using T = typename ST::element;
  CUtensorMap map;
  const cuuint64_t dims[3] = {cols, rows, depth};
  const cuuint64_t strides[2] = {cols * sizeof(T), rows * cols * sizeof(T)};
  const cuuint32_t box[3] = {cuuint32_t(ST::box_cols), cuuint32_t(ST::rows), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUresult r = tensor_map_encoder()(&map, tma_type<T>(), 3, const_cast<T*>(data), dims, strides, box,
                                          element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, tma_swizzle(ST::swizzle),
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled refused the map: CUresult " + std::to_string(r));
  return map;
}

}  // namespace tk
