#include "src/residency.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "src/errors.hpp"

namespace tkprobe {

namespace {
constexpr std::size_t kSmemGranule = 128;  // shared memory is allocated to blocks in 128-byte units
}

Residency plan_residency(const void* kernel, int block_threads, int blocks_per_sm, std::size_t needed_smem,
                         const DeviceInfo& device) {
  int reserved = 0, max_threads = 0;
  TK_CUDA(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device.index));
  TK_CUDA(cudaDeviceGetAttribute(&max_threads, cudaDevAttrMaxThreadsPerMultiProcessor, device.index));
  const std::size_t share = static_cast<std::size_t>(device.smem_per_sm) / blocks_per_sm - reserved;
  const std::size_t padded = std::min<std::size_t>(std::max(needed_smem, share / kSmemGranule * kSmemGranule),
                                                   static_cast<std::size_t>(device.smem_per_block_optin));
  TK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(padded)));
  Residency r;
  r.dynamic_smem = padded;
  TK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r.blocks_per_sm, kernel, block_threads, padded));
  r.warps_per_sm = r.blocks_per_sm * block_threads / 32;
  r.occupancy = static_cast<double>(r.blocks_per_sm * block_threads) / max_threads;
  cudaFuncAttributes attributes{};
  TK_CUDA(cudaFuncGetAttributes(&attributes, kernel));
  r.registers_per_thread = attributes.numRegs;
  return r;
}

int concurrent_blocks_per_sm(std::span<const BlockSpan> spans) {
  std::map<std::uint32_t, std::vector<std::pair<std::uint64_t, int>>> events;  // per SM: (time, +1 begin / -1 end)
  for (const BlockSpan& s : spans) {
    events[s.sm].push_back({s.begin_ns, +1});
    events[s.sm].push_back({s.end_ns, -1});
  }
  int least = 0;
  for (auto& [sm, e] : events) {
    std::sort(e.begin(), e.end());  // at equal times an end (-1) sorts first: touching spans do not overlap
    int running = 0, most = 0;
    for (const auto& [t, step] : e) most = std::max(most, running += step);
    least = least == 0 ? most : std::min(least, most);
  }
  return least;
}

void launch_kernel(const void* kernel, int blocks, int block_threads, std::size_t smem, void* params,
                   cudaStream_t stream) {
  void* args[] = {params};
  TK_CUDA(cudaLaunchKernel(kernel, dim3(blocks), dim3(block_threads), args, smem, stream));
}

}  // namespace tkprobe
