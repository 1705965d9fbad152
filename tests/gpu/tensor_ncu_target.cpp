// Launches the tensor-core probes' kernels once each, one block and a few passes, for ncu to
// count tensor-pipe instructions (tests/gpu/check_ncu.py); prints what the kernels should
// issue. A wgmma is one instruction in each of its warpgroup's four warps; on sm_90 an e4m3
// mma.sync is two f16 HMMA (the SASS test shows the same).
#include <cstdio>

#include "probes/timed_kernels/mma_sync_kernels.hpp"
#include "probes/timed_kernels/wgmma_kernels.hpp"
#include "src/device_buffer.hpp"
#include "src/residency.hpp"
#include "tests/gpu/skip_without_device.hpp"

using namespace tkprobe;
using namespace tkprobe::tensor;

namespace {

constexpr const char* kGmma = "sm__inst_executed_pipe_tensor_op_gmma.sum";
constexpr const char* kHmma = "sm__inst_executed_pipe_tensor_op_hmma.sum";
constexpr long long kPairs = 4;
constexpr int kWarpsPerWarpgroup = 4;

struct Buffers {
  DeviceBuffer<std::uint8_t> image{wgmma_image_bytes(256)};
  DeviceBuffer<std::uint32_t> a{2 * kKSlices * kWarpgroupThreads * kAFragmentRegs}, b{kMaxIlp * 32 * kMmaBRegs};
  DeviceBuffer<std::uint32_t> out{kWarpgroupThreads * 128};
  DeviceBuffer<ClockWindow> clock{1};
  DeviceBuffer<BlockSpan> spans{1};
};

void wgmma(Buffers& buf, DType d, int n, ASource a) {
  const void* kernel = wgmma_kernel({d, default_acc(d), n, a});
  TK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, wgmma_smem_bytes(n)));
  WgmmaParams p{buf.image.get(), buf.a.get(), kPairs, buf.out.get(), buf.clock.get(), buf.spans.get()};
  launch_kernel(kernel, 1, kWarpgroupThreads, wgmma_smem_bytes(n), &p, nullptr);
  std::printf("{\"case\": \"wgmma %s 64x%d A=%s\", \"value\": \"%s\", \"expected\": %lld}\n", info(d).name.data(), n,
              name(a).data(), kGmma, kWarpsPerWarpgroup * kKSlices * (1 + 2 * kPairs));
}

void mma_sync(Buffers& buf, DType d, int ilp, int hmma_per_mma) {
  MmaSyncParams p{buf.a.get(), buf.b.get(), kPairs, buf.out.get(), buf.clock.get(), buf.spans.get()};
  launch_kernel(mma_sync_kernel({d, ilp}), 1, 32, 0, &p, nullptr);
  std::printf("{\"case\": \"mma.sync %s ilp=%d\", \"value\": \"%s\", \"expected\": %lld}\n", info(d).name.data(), ilp,
              kHmma, hmma_per_mma * ilp * (1 + 2 * kPairs));
}

}  // namespace

int main() {
  if (!test::have_device()) return test::kSkipped;
  Buffers buf;
  buf.image.poison(0);
  buf.a.poison(0);
  buf.b.poison(0);
  wgmma(buf, DType::bf16, 256, ASource::smem);
  wgmma(buf, DType::e4m3, 128, ASource::reg);
  wgmma(buf, DType::s8, 48, ASource::smem);
  mma_sync(buf, DType::bf16, 2, 1);
  mma_sync(buf, DType::tf32, 8, 1);
  mma_sync(buf, DType::e4m3, 1, 2);
  TK_CUDA(cudaDeviceSynchronize());
  return 0;
}
