// Launches the cluster probe's distributed-shared-memory kernels and the overlap probe's wgmma
// kernels, small, for ncu to count what they do (tests/gpu/check_ncu.py). Prints per launch, in
// order, what the probes' accounts imply:
//   cluster  the loads that reach another block's shared memory (DSMEM), exactly: the neighbour
//            stream's warp-wide 16-byte loads and the chase's single-thread loads, as L1TEX requests
//            and sectors in the dshared memory space; the own-memory stream, through the same cluster
//            addressing, as (nearly) none of them.
//   overlap  the wgmma a kernel issues, exactly, and the tensor pipe's active share of the SM's
//            active cycles, which must agree with the probe's % of the clock peak (the suite
//            baseline's figure) within kShareTolerance points: high with no filler, low where the
//            probe saw tensor throughput halved by the filler.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include "probes/cluster/cluster_kernels.hpp"
#include "probes/overlap/overlap_kernels.hpp"
#include "probes/timed_kernels/wgmma_kernels.hpp"
#include "src/device.hpp"
#include "src/device_buffer.hpp"
#include "src/residency.hpp"
#include "tests/gpu/skip_without_device.hpp"

using namespace tkprobe;
namespace cl = tkprobe::cluster;
using tensor::Filler;

namespace {

// --- cluster: DSMEM traffic ---------------------------------------------------------------------
// L1TEX's requests and 32-byte sectors of loads in the dshared (distributed shared memory) space,
// counted where the load is issued (the LSU pipe of the reading SM). In the SASS both kernels'
// ld.shared::cluster are generic LD through the shared window (check_sass.py), which L1TEX resolves
// to dshared when the address is another block's. A request is one warp-level load instruction
// (all threads alike); a warp's 16-byte loads of 512 contiguous bytes are 16 sectors.
// Names: ncu's l1tex__t_{requests,sectors}_pipe_lsu_mem_<space>_op_ld family with the dshared space
// that clusters brought (sm_90). NVIDIA's section files do not list them (the memory tables are
// built in); public ncu scripts and reports use them on sm_100-sm_120 (on sm_110 the byte form read
// 1.03x a remote stream's bytes) and in the L1 hit-rate sum; this test is their first run on sm_90.
constexpr const char* kDsmemRequests = "l1tex__t_requests_pipe_lsu_mem_dshared_op_ld.sum";
constexpr const char* kDsmemSectors = "l1tex__t_sectors_pipe_lsu_mem_dshared_op_ld.sum";

constexpr int kClusterSize = 2;    // the probe's first size: the neighbour is rank 1 - rank
constexpr int kClusters = 16;      // 32 blocks, fewer than the SMs: one wave (counts do not depend on placement)
constexpr int kStreamPasses = 8;   // the probe's --quick count
constexpr int kWarp = 32, kLoadBytes = 16, kSectorBytes = 32;
constexpr int kChainWords = 4096;  // the probe's 16 KiB chain, stride 33 words (one cycle: gcd(33, 4096) = 1)
constexpr int kChainStride = 33;
constexpr int kChaseLoads = 4096;  // a multiple of kChaseUnroll

// Warp-level loads one block issues in a stream launch: its whole 64 KiB buffer, 16 bytes a thread
// each, every pass. The fill before them is plain st.shared into the block's own memory.
constexpr double stream_requests(int passes) {
  return double(kClusterSize) * kClusters * cl::stream_bytes_per_block(passes) / kLoadBytes / kWarp;
}

// The stream at `offset` ranks along (0: the block's own memory, through its own cluster address);
// ncu's `metric` must read `model` (exact) or at most it.
void stream(int offset, const char* metric, double model, bool exact) {
  DeviceBuffer<ClockWindow> clock(1);
  DeviceBuffer<std::uint32_t> sink(cl::kThreads);
  TK_CUDA(cl::launch_stream(kClusterSize, kClusters, {offset, kStreamPasses}, {clock.get(), sink.get()}, nullptr));
  TK_CUDA(cudaDeviceSynchronize());
  std::printf("{\"case\": \"cluster stream from %s, %d clusters of %d, %d passes of 64 KiB: DSMEM load %s\", "
              "\"value\": \"%s\", \"%s\": %.0f, \"show\": [\"%s\"]}\n",
              offset == 0 ? "own memory" : "the neighbour's memory", kClusters, kClusterSize, kStreamPasses,
              metric == kDsmemRequests ? "requests" : "sectors", metric, exact ? "expected" : "max", model,
              metric == kDsmemRequests ? kDsmemSectors : kDsmemRequests);
}

// Block 0's one thread follows the chain in rank 1's memory: the warm-up's kChaseUnroll loads and
// kChaseLoads timed ones, each a one-thread request of one sector.
void chase(const DeviceBuffer<std::uint32_t>& next) {
  DeviceBuffer<std::uint64_t> cycles(1);
  DeviceBuffer<ClockWindow> clock(1);
  DeviceBuffer<std::uint32_t> sink(1);
  TK_CUDA(cl::launch_chase(kClusterSize, {next.get(), kChainWords, kChaseLoads, 1},
                           {cycles.get(), clock.get(), sink.get()}, nullptr));
  TK_CUDA(cudaDeviceSynchronize());
  std::printf("{\"case\": \"cluster chase in rank 1's memory, %d + %d dependent loads: DSMEM load requests\", "
              "\"value\": \"%s\", \"expected\": %d, \"show\": [\"%s\"]}\n",
              cl::kChaseUnroll, kChaseLoads, kDsmemRequests, cl::kChaseUnroll + kChaseLoads, kDsmemSectors);
}

// --- overlap: wgmma issued and the tensor pipe's share --------------------------------------------
// Warp-level tensor-pipe gmma instructions (a wgmma is one in each of its warpgroup's four warps:
// tests/gpu/tensor_ncu_target.cpp, passing on the H200).
constexpr const char* kGmma = "sm__inst_executed_pipe_tensor_op_gmma.sum";
// Cycles the SM's tensor pipe was busy, all tensor work together, as a % of the SM's active cycles
// at one unit of work a cycle: the "Tensor (All)" bar of ComputeWorkloadAnalysis.section, which
// ncu uses on sm_90 (its _v2 form is sm_89's only; no gmma-specific cycles counter is listed for
// sm_90, and HighPipeUtilization.py's sm_90 pipes name gmma only for instructions). Here the
// kernels' only tensor work is wgmma, so it is wgmma's share. Shown beside it: the FP sub-pipe's
// share (Hopper's 16-bit wgmma is said to count there), and the XU pipe's instructions (MUFU.EX2).
constexpr const char* kTensorActive = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";
constexpr const char* kHmmaActive = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";
constexpr const char* kXu = "sm__inst_executed_pipe_xu.sum";

constexpr int kWgmmaN = overlap::kWgmmaN;  // bf16 m64n256k16 from shared memory, 128 cycles at peak
constexpr long long kPairs = 2048;         // a multiple of kPairUnroll: 16388 wgmma a warpgroup
constexpr int kWarpsPerWarpgroup = 4;
// The ncu share and the probe's % of the clock peak measure one thing two ways: cycles the tensor
// pipe ran against cycles the SM ran, and FLOP done against FLOP the measured clock allows. The
// share also counts the block's prologue (48 KiB image from DRAM after ncu's cache flush: tens of
// thousands of cycles at most, against 16388 x ~130 = 2.1 M with no filler: under 2%) as idle. 10 points covers that and how the
// counter rounds, and still tells 98.8 from 44.6 from 34.6.
constexpr double kShareTolerance = 10;

struct WgmmaBuffers {
  DeviceBuffer<std::uint8_t> image{tensor::wgmma_image_bytes(kWgmmaN)};
  DeviceBuffer<std::uint32_t> a{2 * tensor::kKSlices * tensor::kWarpgroupThreads * tensor::kAFragmentRegs};
  DeviceBuffer<std::uint32_t> out{tensor::kWarpgroupThreads * 128};  // bf16 -> f32, n = 256: 128 registers
  DeviceBuffer<ClockWindow> clock{1};
};

// One warpgroup on every SM, as the probe's 1-warpgroup rows ran (shared memory padded so that no
// second block fits: src/residency.hpp), `count` instructions of `filler` after each wgmma.
void wgmma(const DeviceInfo& device, WgmmaBuffers& buf, Filler filler, int count, const char* metric,
           const char* tail) {
  const void* kernel = filler == Filler::none
                           ? tensor::wgmma_kernel({tensor::DType::bf16, tensor::Acc::f32, kWgmmaN, tensor::ASource::smem})
                           : overlap::filler_kernel(filler, count);
  const Residency r =
      plan_residency(kernel, tensor::kWarpgroupThreads, 1, tensor::wgmma_smem_bytes(kWgmmaN), device);
  if (kernel == nullptr || r.blocks_per_sm != 1) {
    std::fprintf(stderr, "overlap kernel (filler %d, k = %d): %d blocks fit per SM, not 1\n", int(filler), count,
                 r.blocks_per_sm);
    std::exit(1);
  }
  DeviceBuffer<BlockSpan> spans(device.sms);
  tensor::WgmmaParams p{buf.image.get(), buf.a.get(), kPairs, buf.out.get(), buf.clock.get(), spans.get()};
  launch_kernel(kernel, device.sms, tensor::kWarpgroupThreads, r.dynamic_smem, &p, nullptr);
  TK_CUDA(cudaGetLastError());
  TK_CUDA(cudaDeviceSynchronize());
  std::set<std::uint32_t> sms;
  for (const BlockSpan& s : spans.download()) sms.insert(s.sm);
  if (int(sms.size()) != device.sms) {  // the share is per SM: one block on each, as the probe's rows
    std::fprintf(stderr, "overlap kernel: %d blocks ran on %zu SMs\n", device.sms, sms.size());
    std::exit(1);
  }
  char what[32] = "no filler";
  if (filler != Filler::none) {
    std::snprintf(what, sizeof what, "%d %s per wgmma", count, filler == Filler::fma ? "FFMA" : "EX2");
  }
  std::printf("{\"case\": \"overlap, %s, 1 warpgroup per SM: %s\", \"value\": \"%s\", %s}\n", what,
              metric == kGmma ? "wgmma issued" : "tensor pipe active %", metric, tail);
}

void wgmma_count(const DeviceInfo& device, WgmmaBuffers& buf, Filler filler, int count) {
  const long long per_warpgroup = tensor::kKSlices * (1 + 2 * kPairs);
  char tail[64];
  std::snprintf(tail, sizeof tail, "\"expected\": %lld", device.sms * kWarpsPerWarpgroup * per_warpgroup);
  wgmma(device, buf, filler, count, kGmma, tail);
}

// `probe_pct`: the suite baseline's % of the clock peak for this row (results/h200/suite.json,
// 4fc7e77, overlap, bf16 64x256x16, 1 warpgroup per SM). Bounds: that +- kShareTolerance, at most 100.
void wgmma_share(const DeviceInfo& device, WgmmaBuffers& buf, Filler filler, int count, double probe_pct) {
  char tail[256];
  std::snprintf(tail, sizeof tail, "\"min\": %.1f, \"max\": %.1f, \"show\": [\"%s\", \"%s\", \"%s\"]",
                probe_pct - kShareTolerance, std::min(probe_pct + kShareTolerance, 100.0), kGmma, kHmmaActive, kXu);
  wgmma(device, buf, filler, count, kTensorActive, tail);
}

}  // namespace

int main() {
  if (!test::have_device()) return test::kSkipped;
  const DeviceInfo device = query_device(0);

  // cluster. The neighbour stream: every load is another block's memory, so requests = its warp
  // loads and sectors = its bytes / 32, exactly. The chase likewise, one thread a load. The own
  // stream reads the block's own memory through its cluster address (the probe's `own` rows, 33
  // cycles a load against ~200 for a neighbour's: it never leaves the SM), so no DSMEM request is
  // expected: at most 1% of the neighbour's count. (Should ncu file by address space rather than
  // by where the data lives, this case reads the full count and says so.)
  TK_CUDA(cl::prepare(kClusterSize, kChainWords));
  DeviceBuffer<std::uint32_t> next(kChainWords);
  std::vector<std::uint32_t> host(kChainWords);
  for (int i = 0; i < kChainWords; ++i) host[i] = std::uint32_t((i + kChainStride) % kChainWords);
  next.upload(host);
  stream(1, kDsmemRequests, stream_requests(kStreamPasses), true);
  stream(1, kDsmemSectors, stream_requests(kStreamPasses) * kWarp * kLoadBytes / kSectorBytes, true);
  stream(0, kDsmemRequests, 0.01 * stream_requests(kStreamPasses), false);
  chase(next);

  // overlap. The wgmma count, exactly, with no filler and with the two fillers at the counts used
  // below; then the tensor pipe's share at three points of the probe's 1-warpgroup curves:
  //   none     98.8% of the clock peak: the pipe busy nearly every cycle
  //   EX2 x32  44.6%: MUFU's 16 a cycle per SM need 128 x 32 / 16 = 256 cycles per 128-cycle wgmma,
  //            so at most 50% (the probe's "halved at 32 EX2")
  //   FFMA x128 34.6%: the probe's "halved at 128 FFMA" (why FFMA halves there is open; the counter
  //            confirms the figure, not a model)
  WgmmaBuffers buf;
  buf.image.poison(0x3c);  // bf16 0x3c3c (~0.0115) everywhere: nonzero operands, as the probe's
  buf.a.poison(0);
  wgmma_count(device, buf, Filler::none, 0);
  wgmma_count(device, buf, Filler::ex2, 32);
  wgmma_count(device, buf, Filler::fma, 128);
  wgmma_share(device, buf, Filler::none, 0, 98.8);
  wgmma_share(device, buf, Filler::ex2, 32, 44.6);
  wgmma_share(device, buf, Filler::fma, 128, 34.6);
  return 0;
}
