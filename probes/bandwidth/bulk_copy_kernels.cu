#include <algorithm>

#include "probes/bandwidth/bulk_copy_kernels.hpp"
#include "src/errors.hpp"
#include "tk/arch/mbarrier.cuh"
#include "tk/arch/shared_memory.cuh"
#include "tk/arch/tma.cuh"

namespace tkprobe::bandwidth {
namespace {

using namespace tk::arch;

// CTA b copies tiles b, b + gridDim.x, ... Tile j of this CTA lands in stage j % stages, its
// n = j / stages-th use, and full[stage] completes phase n when its bytes have landed. The ring
// starts with `stages` loads in flight; after storing tile j, the thread waits until the store
// of tile j - 1 has finished reading its stage (bulk_wait_read<1>: only the newest group may
// still be reading) and refills that stage with tile j - 1 + stages.
__global__ void __launch_bounds__(kBulkThreads) bulk_copy_kernel(const std::uint8_t* src, std::uint8_t* dst,
                                                                 std::size_t bytes, int tile_bytes, int stages) {
  extern __shared__ __align__(16) std::uint8_t smem[];
  if (threadIdx.x != 0) return;
  const std::uint32_t ring = shared_address(smem);
  const std::uint32_t full = ring + stages * tile_bytes;  // stages mbarriers of 8 bytes
  const std::size_t tiles = (bytes + tile_bytes - 1) / tile_bytes;
  const long long mine = blockIdx.x < tiles ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  const auto offset = [&](long long j) { return (blockIdx.x + std::size_t(j) * gridDim.x) * tile_bytes; };
  const auto size = [&](long long j) { return std::uint32_t(std::min<std::size_t>(tile_bytes, bytes - offset(j))); };
  const auto stage = [&](long long j) { return std::uint32_t(j % stages); };
  const auto load = [&](long long j) {
    const std::uint32_t bar = full + 8 * stage(j);
    mbarrier_arrive_expect_tx(bar, size(j));
    bulk_load(ring + stage(j) * tile_bytes, src + offset(j), size(j), bar);
  };
  for (int s = 0; s < stages; ++s) mbarrier_init(full + 8 * s, 1);
  fence_mbarrier_init();
  for (long long j = 0; j < std::min<long long>(stages, mine); ++j) load(j);
  for (long long j = 0; j < mine; ++j) {
    mbarrier_wait(full + 8 * stage(j), std::uint32_t(j / stages) & 1);
    bulk_store(dst + offset(j), ring + stage(j) * tile_bytes, size(j));
    bulk_commit();
    if (j >= 1 && j - 1 + stages < mine) {
      bulk_wait_read<1>();
      load(j - 1 + stages);
    }
  }
  bulk_wait<0>();  // every store performed before the CTA (and its shared memory) goes
}

}  // namespace

void launch_bulk_copy(BulkVariant v, const uint4* src, uint4* dst, std::size_t count, int sms, cudaStream_t stream) {
  const int smem = static_cast<int>(bulk_smem_bytes(v));
  TK_CUDA(cudaFuncSetAttribute(bulk_copy_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  bulk_copy_kernel<<<sms * v.ctas_per_sm, kBulkThreads, smem, stream>>>(
      reinterpret_cast<const std::uint8_t*>(src), reinterpret_cast<std::uint8_t*>(dst), count * sizeof(uint4),
      v.tile_kib * 1024, v.stages);
  TK_CUDA(cudaGetLastError());
}

}  // namespace tkprobe::bandwidth
