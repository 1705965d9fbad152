// Launches kernels whose place on the roofline the probes predict, once each, for
// tests/gpu/test_roofline.py to run under `tkprobe roofline`. Prints, per launch in order, what the
// roofline must find: {"case", "kernel" (a regex of its name), "binding", "min_pct", "max_pct"} and
// where the work is known exactly, "tensor_tflop" or "smem_conflict_x".
#include <cstdio>
#include <random>
#include <vector>

#include "kernels/gemm/gemm.hpp"
#include "probes/measure/tensor_types.hpp"
#include "probes/smem-banks/bank_model.hpp"
#include "probes/timed_kernels/bandwidth_kernels.hpp"
#include "probes/timed_kernels/smem_banks_kernels.hpp"
#include "src/device_buffer.hpp"
#include "tests/gpu/skip_without_device.hpp"

using namespace tkprobe;
namespace bw = bandwidth;

namespace {

// A kernel on its ceiling reaches it within 5%, the GEMM and the HBM streams alike.
constexpr double kOnCeilingPct = 95, kAboveCeilingPct = 105;
// The strided shared loads' own bar: their loop's address arithmetic shares the issue slots.
constexpr double kSmemOnCeilingPct = 90;

void expect(const char* which, const char* kernel, const char* binding, double min_pct, double max_pct,
            const char* exact = nullptr, double value = 0) {
  std::printf("{\"case\": \"%s\", \"kernel\": \"%s\", \"binding\": \"%s\", \"min_pct\": %g, \"max_pct\": %g", which,
              kernel, binding, min_pct, max_pct);
  if (exact) std::printf(", \"%s\": %.6g", exact, value);
  std::printf("}\n");
}

// The DSL GEMM at the suite's largest shape, on random bf16 operands: on the tensor ceiling.
void gemm_8192() {
  constexpr int kSize = 8192;
  const gemm::Shape s{kSize, kSize, kSize};
  std::mt19937_64 rng(50);
  std::vector<std::uint16_t> host(std::size_t(kSize) * kSize);
  for (auto& v : host) v = static_cast<std::uint16_t>(tensor::random_element(tensor::DType::bf16, rng).bits);
  DeviceBuffer<std::uint16_t> a(host.size()), b(host.size()), c(host.size());
  a.upload(host);
  b.upload(host);
  const auto bf16 = [](const DeviceBuffer<std::uint16_t>& x) { return reinterpret_cast<__nv_bfloat16*>(x.get()); };
  const gemm::Gemm g(bf16(a), bf16(b), bf16(c), s);
  g(nullptr);
  TK_CUDA(cudaDeviceSynchronize());
  expect("gemm 8192^3", "gemm_kernel", "tensor bf16", kOnCeilingPct, kAboveCeilingPct, "tensor_tflop",
         2.0 * kSize * kSize * kSize / 1e12);
}

// bandwidth's HBM read and copy over 1 GiB, each in the variant bandwidth finds best there: on the
// HBM ceiling for their mix. (On an H100 a grid-stride copy reached 94% of the best copy, 3.00 TB/s;
// by tiles, 99%: decision 006.)
void hbm_stream(bw::Stream op, const bw::Variant& v, const char* which) {
  constexpr std::size_t kWords = (std::size_t(1) << 30) / sizeof(uint4);
  DeviceBuffer<uint4> src(kWords), dst(kWords);
  DeviceBuffer<std::uint32_t> sink(1);
  int device = 0, sms = 0;
  TK_CUDA(cudaGetDevice(&device));
  TK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  bw::fill(src.get(), kWords, 50, nullptr);
  bw::launch_stream(op, v, src.get(), dst.get(), kWords, 50, sink.get(), bw::blocks_for(v, kWords, sms * bw::kBlocksPerSm),
                    0, nullptr);
  TK_CUDA(cudaDeviceSynchronize());
  expect(which, "streaming_kernel", "hbm", kOnCeilingPct, kAboveCeilingPct);
}

// 4-byte shared loads `stride` words apart, 32 warps on every SM: the banks deliver their
// conflict-free rate, of which a conflict of degree d leaves the instructions 1/d.
void strided_smem(int stride) {
  constexpr int kWidth = 4, kWarps = 32, kTrips = 16384;
  int device = 0, sms = 0;
  TK_CUDA(cudaGetDevice(&device));
  TK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  DeviceBuffer<std::uint64_t> cycles(sms);
  DeviceBuffer<std::uint32_t> sink(1024);
  DeviceBuffer<ClockWindow> clock(1);
  smem_banks::launch_strided(kWidth, stride, {sms, kWarps, kTrips}, {cycles.get(), sink.get(), clock.get()}, nullptr);
  TK_CUDA(cudaDeviceSynchronize());
  char which[64];
  std::snprintf(which, sizeof which, "ld.shared 4 bytes stride %d", stride);
  expect(which, "strided_kernel", "smem", kSmemOnCeilingPct, kAboveCeilingPct, "smem_conflict_x",
         banks::strided_ways(kWidth, stride));
}

}  // namespace

int main() {
  if (!test::have_device()) return test::kSkipped;
  gemm_8192();
  hbm_stream(bw::Stream::read, {8, bw::Hint::none, bw::Schedule::grid_stride}, "hbm read 1 GiB");
  hbm_stream(bw::Stream::copy, {4, bw::Hint::none, bw::Schedule::tiles}, "hbm copy 1 GiB");
  for (int stride : {1, 2, 4}) strided_smem(stride);
  return 0;
}
