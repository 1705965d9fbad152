#pragma once
// The bandwidth probe's copy through the TMA (probes/bandwidth/bulk_copy_kernels.cu, sm_90a): one thread
// per CTA streams tiles through a ring of shared-memory stages with cp.async.bulk, global ->
// shared (completing on an mbarrier) and shared -> global (bulk groups). No thread touches the
// data, so the copy costs the SM almost no issue slots and the DRAM sees long bursts of reads
// and of writes.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace tkprobe::bandwidth {

struct BulkVariant {
  int tile_kib;     // bytes per cp.async.bulk
  int stages;       // tiles in flight per CTA: stages - 1 loads ahead of the store
  int ctas_per_sm;  // resident CTAs, each with its own ring
};
inline constexpr BulkVariant kBulkVariants[] = {{8, 4, 4}, {16, 4, 2}, {32, 3, 2}};

inline constexpr int kBulkThreads = 32;  // one warp, of which one thread issues every copy

constexpr std::size_t bulk_smem_bytes(BulkVariant v) {
  return std::size_t(v.stages) * v.tile_kib * 1024 + v.stages * sizeof(std::uint64_t);
}

// dst = src for `count` 16-byte words, by sms x ctas_per_sm CTAs.
void launch_bulk_copy(BulkVariant v, const uint4* src, uint4* dst, std::size_t count, int sms, cudaStream_t stream);

}  // namespace tkprobe::bandwidth
