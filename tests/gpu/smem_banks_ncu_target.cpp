// Launches each smem-banks kernel once, small, for ncu to count shared-load instructions and
// wavefronts (tests/gpu/check_ncu.py). Prints, per launch in order, what the bank model
// predicts: wavefronts per warp-wide instruction.
#include <cstdio>

#include "probes/smem-banks/bank_model.hpp"
#include "probes/timed_kernels/smem_banks_kernels.hpp"
#include "src/device_buffer.hpp"
#include "tests/gpu/skip_without_device.hpp"

using namespace tkprobe;
using tk::layout::Swizzle;

// ncu's counters: shared-load wavefronts per warp-wide instruction, for ld.shared and ldmatrix.
constexpr const char* kLdInstructions = "smsp__inst_executed_op_shared_ld.sum";
constexpr const char* kLdWavefronts = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
constexpr const char* kLdsmInstructions = "smsp__sass_inst_executed_op_ldsm.sum";
constexpr const char* kLdsmWavefronts = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum";

int main() {
  if (!test::have_device()) return test::kSkipped;
  DeviceBuffer<std::uint64_t> cycles(1);
  DeviceBuffer<std::uint32_t> sink(1024);
  DeviceBuffer<ClockWindow> clock(1);
  const smem_banks::Outputs out{cycles.get(), sink.get(), clock.get()};
  const smem_banks::Launch one_warp{1, 1, 4};
  const struct {
    int width, stride;
  } strided[] = {{4, 1}, {4, 2}, {4, 3}, {4, 8}, {4, 32}, {4, 64}, {8, 1}, {8, 2}, {8, 16}, {16, 1}, {16, 2}, {16, 8}};
  for (const auto& c : strided) {
    smem_banks::launch_strided(c.width, c.stride, one_warp, out, nullptr);
    std::printf("{\"case\": \"width %d stride %d\", \"value\": \"%s\", \"per\": \"%s\", \"expected\": %d}\n",
                c.width, c.stride, kLdWavefronts, kLdInstructions, banks::strided_wavefronts(c.width, c.stride));
  }
  for (Swizzle mode : {Swizzle::none, Swizzle::b128}) {
    smem_banks::launch_ldmatrix(mode, one_warp, out, nullptr);
    std::uint32_t addresses[32];
    for (int lane = 0; lane < 32; ++lane) addresses[lane] = smem_banks::ldmatrix_lane_offset(lane, mode);
    std::printf("{\"case\": \"ldmatrix.x4 %s\", \"value\": \"%s\", \"per\": \"%s\", \"expected\": %d}\n",
                mode == Swizzle::none ? "unswizzled" : "128B swizzle", kLdsmWavefronts, kLdsmInstructions,
                banks::wavefronts(addresses, 16));
  }
  TK_CUDA(cudaDeviceSynchronize());
  return 0;
}
