#pragma once
// The TMA load behind tma-swizzle (probes/tma_kernels.cu): one 2-D box copied from global to
// shared memory by cp.async.bulk.tensor under a tensor map, completing on an mbarrier, then the
// shared bytes copied out as they landed.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace tkprobe::tma {

inline constexpr int kSmemAlign = 1024;  // the 128-byte swizzle's pattern repeats every 1024 bytes

struct Box {
  int rows, cols;  // cols: elements along the contiguous (inner) dimension
};

// cuTensorMapEncodeTiled for a rows x cols tensor of `element_bytes` elements at `global`,
// read whole as one box. Returns the driver's result (CUDA_SUCCESS or why it refused).
CUresult encode_map(CUtensorMap* map, void* global, int element_bytes, Box box, CUtensorMapSwizzle swizzle);

// The driver's name for a result: "CUDA_ERROR_INVALID_VALUE".
const char* result_name(CUresult r);

// Loads the map's box into shared memory at a 1024-byte-aligned address and copies those
// `bytes` shared bytes to `out`.
void load_box(const CUtensorMap& map, int bytes, std::uint8_t* out, cudaStream_t stream);

}  // namespace tkprobe::tma
