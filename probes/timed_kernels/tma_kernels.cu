#include <cudaTypedefs.h>

#include "probes/timed_kernels/tma_kernels.hpp"
#include "src/errors.hpp"
#include "tk/arch/mbarrier.cuh"
#include "tk/arch/shared_memory.cuh"
#include "tk/arch/tma.cuh"
#include "tk/types/gl.cuh"

namespace tkprobe::tma {
namespace {

using namespace tk::arch;

// The region is poisoned (0xff) first, so bytes the TMA leaves alone read back as such. Then one
// thread arms the barrier with the box's bytes, issues the bulk tensor copy (PTX ISA 9.7.9.25
// "cp.async.bulk.tensor") and waits on the barrier's phase 0; every thread copies the region out.
__global__ void load_box_kernel(const __grid_constant__ CUtensorMap map, int box_bytes, int region_bytes,
                                std::uint8_t* out) {
  extern __shared__ std::uint8_t smem_raw[];
  __shared__ alignas(8) std::uint64_t barrier;
  const std::uint32_t raw = shared_address(smem_raw);
  std::uint8_t* region = smem_raw + (kSmemAlign - raw % kSmemAlign) % kSmemAlign;
  const std::uint32_t bar = shared_address(&barrier);
  for (int i = threadIdx.x; i < region_bytes; i += blockDim.x) region[i] = 0xff;
  // The poison is written through the generic proxy and the copy lands through the async one.
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    mbarrier_init(bar, 1);
    fence_mbarrier_init();
    mbarrier_arrive_expect_tx(bar, box_bytes);
    tma_load_2d(shared_address(region), map, 0, 0, bar);
    mbarrier_wait(bar, 0);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < region_bytes; i += blockDim.x) out[i] = region[i];
}

CUtensorMapDataType data_type(int element_bytes) {
  return element_bytes == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8
         : element_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                              : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

}  // namespace

CUresult encode_map(CUtensorMap* map, void* global, int element_bytes, Extent tensor, Box box,
                    CUtensorMapSwizzle swizzle) {
  const cuuint64_t dims[2] = {tensor.cols, tensor.rows};
  const cuuint64_t strides[1] = {tensor.cols * element_bytes};
  const cuuint32_t box_dims[2] = {cuuint32_t(box.cols), cuuint32_t(box.rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  return tk::tensor_map_encoder()(map, data_type(element_bytes), 2, global, dims, strides, box_dims, element_strides,
                   CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

CUresult encode_map(CUtensorMap* map, void* global, int element_bytes, Box box, CUtensorMapSwizzle swizzle) {
  return encode_map(map, global, element_bytes, Extent{std::uint64_t(box.rows), std::uint64_t(box.cols)}, box, swizzle);
}

const char* result_name(CUresult r) {
  const char* name = nullptr;
  static PFN_cuGetErrorName_v6000 get_name = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    TK_CUDA(cudaGetDriverEntryPointByVersion("cuGetErrorName", &p, 6000, cudaEnableDefault, &found));
    return reinterpret_cast<PFN_cuGetErrorName_v6000>(p);
  }();
  return get_name && get_name(r, &name) == CUDA_SUCCESS ? name : "unknown CUresult";
}

void load_box(const CUtensorMap& map, int box_bytes, int region_bytes, std::uint8_t* out, cudaStream_t stream) {
  const int smem = region_bytes + kSmemAlign;
  TK_CUDA(cudaFuncSetAttribute(load_box_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  load_box_kernel<<<1, 128, smem, stream>>>(map, box_bytes, region_bytes, out);
  TK_CUDA(cudaGetLastError());
}

}  // namespace tkprobe::tma
