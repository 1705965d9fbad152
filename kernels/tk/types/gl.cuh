#pragma once
// A global 2-D tensor as the TMA sees it: a CUtensorMap whose box is one box of a shared tile
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

// The map for a row-major rows x cols tensor at `data`, read in tiles of type ST (one box = ST's
// rows x one swizzle span of columns). Throws, naming the driver's result, if it is refused.
template <class ST>
CUtensorMap tma_map(const typename ST::element* data, std::uint64_t rows, std::uint64_t cols) {
  using T = typename ST::element;
  CUtensorMap map;
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {cols * sizeof(T)};
  const cuuint32_t box[2] = {cuuint32_t(ST::box_cols), cuuint32_t(ST::rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = tensor_map_encoder()(&map, tma_type<T>(), 2, const_cast<T*>(data), dims, strides, box,
                                          element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, tma_swizzle(ST::swizzle),
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled refused the map: CUresult " + std::to_string(r));
  return map;
}

}  // namespace tk
