#include "probes/timed_kernels/l2_read.hpp"

#include "probes/timed_kernels/bandwidth_kernels.hpp"
#include "src/device_buffer.hpp"

namespace tkprobe {

L2Read measure_l2_read(ProbeContext& ctx, std::size_t bytes, std::string_view label) {
  namespace bw = bandwidth;
  const std::size_t count = bytes / sizeof(uint4);
  const auto seed = static_cast<std::uint32_t>(ctx.rng());
  DeviceBuffer<uint4> src(count);
  DeviceBuffer<std::uint32_t> sink(1);
  bw::fill(src.get(), count, seed, ctx.harness.stream());
  const int blocks = ctx.device.sms * bw::kBlocksPerSm;
  L2Read out;
  out.passes = l2_read_passes(bytes);
  const auto launch = [&](cudaStream_t s) { bw::launch_l2_read(src.get(), count, out.passes, sink.get(), blocks, s); };
  out.m = ctx.harness.time_kernel_rate(label, launch, double(count * sizeof(uint4)) * out.passes / 1e12);
  sink.poison(0);
  launch(ctx.harness.stream());
  out.xor_read = sink.download()[0];
  out.xor_expected = bw::pattern_xor(count, seed);
  return out;
}

}  // namespace tkprobe
