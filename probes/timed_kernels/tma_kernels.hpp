#pragma once
// The TMA load behind tma-swizzle (tma_kernels.cu); copy-engines uses its boxes and tensor maps.
// One 2-D box copied from global to shared memory by cp.async.bulk.tensor under a tensor map,
// completing on an mbarrier, then the shared bytes copied out as they landed.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace tkprobe::tma {

inline constexpr int kSmemAlign = 1024;  // the 128-byte swizzle's pattern repeats every 1024 bytes

struct Box {
  int rows, cols;  // cols: elements along the contiguous (inner) dimension
};

// A 2-D tensor in global memory: `rows` rows of `cols` elements each, stored row after row.
struct Extent {
  std::uint64_t rows, cols;
};

// cuTensorMapEncodeTiled for `tensor` (elements of `element_bytes` at `global`), read one `box`
// at a time. Returns the driver's result (CUDA_SUCCESS or why it refused).
CUresult encode_map(CUtensorMap* map, void* global, int element_bytes, Extent tensor, Box box,
                    CUtensorMapSwizzle swizzle);

// The same for a rows x cols tensor read whole as one box.
CUresult encode_map(CUtensorMap* map, void* global, int element_bytes, Box box, CUtensorMapSwizzle swizzle);

// The driver's name for a result: "CUDA_ERROR_INVALID_VALUE".
const char* result_name(CUresult r);

// Poisons `region_bytes` of shared memory (0xff) at a 1024-byte-aligned address, loads the map's
// box (`box_bytes` of data) there and copies the whole region to `out`: where the box landed,
// and which bytes it left alone.
void load_box(const CUtensorMap& map, int box_bytes, int region_bytes, std::uint8_t* out, cudaStream_t stream);

}  // namespace tkprobe::tma
