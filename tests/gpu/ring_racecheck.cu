// The attention backward's dK/dV ring alone, for compute-sanitizer's racecheck (scripts/sanitize.sh).
// A producer thread bulk-copies a vector into each stage of a two-stage ring (cp.async.bulk: the
// async proxy); consumer warps wait for it, read it with their own loads (the generic proxy) and
// release the stage for the next copy. Each variant releases another way:
//   lane0     lane 0 arrives after the warp's loads
//   syncwarp  __syncwarp, then lane 0
//   fence     every lane fence.proxy.async.shared::cta, __syncwarp, then lane 0
//   all       every lane arrives (the empty barrier counts 32 arrivals per warp)
// On the H200 racecheck reports 14 write-after-read hazards for each of the first three and 0 for
// `all` (scripts/sanitize.sh runs it): mbarrier.arrive orders the arriving thread's own accesses
// only, so every thread that loads from a stage arrives itself, as the dK/dV kernel's consumers do. The sums are checked too, so a variant that really raced would show.
// Usage: ring_racecheck lane0|syncwarp|fence|all   (exit 77 without a GPU)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <vector>

#include "tk/ops/warpgroup/tma.cuh"
#include "tk/sync/pipeline.cuh"
#include "tk/types/sv.cuh"
#include "tests/gpu/skip_without_device.hpp"

namespace {

constexpr int kStages = 2;
constexpr int kSteps = 16;  // each stage is refilled 7 times after its first use
constexpr int kLength = 64;
constexpr int kConsumerWarps = 2;
constexpr int kThreads = (1 + kConsumerWarps) * 32;

enum class Release { lane0, syncwarp, fence, all };
using Vector = tk::sv<float, kLength>;

template <Release R>
__device__ void release(tk::pipeline<kStages>& pipe, int step, int lane) {
  if constexpr (R == Release::fence) tk::arch::fence_proxy_async();
  if constexpr (R == Release::syncwarp || R == Release::fence) __syncwarp();
  if (R == Release::all || lane == 0) pipe.release(step);
}

template <Release R>
__global__ void ring_kernel(const float* src, float* sums) {
  __shared__ Vector ring[kStages];
  __shared__ tk::pipeline<kStages> pipe;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) pipe.init(R == Release::all ? kConsumerWarps * 32 : kConsumerWarps);
  __syncthreads();
  if (warp == 0) {
    if (lane == 0) {
      for (int step = 0; step < kSteps; ++step) {
        tk::tma::load_async(ring[pipe.stage(step)], src + step * kLength, pipe.acquire(step, Vector::bytes));
      }
    }
    return;
  }
  float sum = 0;
  for (int step = 0; step < kSteps; ++step) {
    pipe.wait_full(step);
    const Vector& v = ring[pipe.stage(step)];
    sum += v[lane] + v[lane + 32];
    release<R>(pipe, step, lane);
  }
  sums[(warp - 1) * 32 + lane] = sum;
}

bool check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "ring_racecheck: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const struct {
    const char* name;
    void (*kernel)(const float*, float*);
  } variants[] = {{"lane0", ring_kernel<Release::lane0>},
                  {"syncwarp", ring_kernel<Release::syncwarp>},
                  {"fence", ring_kernel<Release::fence>},
                  {"all", ring_kernel<Release::all>}};
  const auto* chosen = argc == 2 ? std::find_if(std::begin(variants), std::end(variants),
                                                [&](const auto& v) { return std::strcmp(v.name, argv[1]) == 0; })
                                 : std::end(variants);
  if (chosen == std::end(variants)) {
    std::fprintf(stderr, "usage: ring_racecheck lane0|syncwarp|fence|all\n");
    return 2;
  }
  if (!tkprobe::test::have_device()) return tkprobe::test::kSkipped;
  std::vector<float> src(kSteps * kLength), expected(kConsumerWarps * 32, 0.0f);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = 0.25f * float(i % 97) - 7.0f;  // exact in fp32 sums
  for (int lane = 0; lane < 32; ++lane) {
    float sum = 0;
    for (int step = 0; step < kSteps; ++step) sum += src[step * kLength + lane] + src[step * kLength + lane + 32];
    for (int w = 0; w < kConsumerWarps; ++w) expected[w * 32 + lane] = sum;
  }
  float *d_src = nullptr, *d_sums = nullptr;
  std::vector<float> sums(expected.size());
  const bool ok = check(cudaMalloc(&d_src, src.size() * sizeof(float)), "cudaMalloc") &&
                  check(cudaMalloc(&d_sums, sums.size() * sizeof(float)), "cudaMalloc") &&
                  check(cudaMemcpy(d_src, src.data(), src.size() * sizeof(float), cudaMemcpyHostToDevice), "copy in") &&
                  check(cudaMemset(d_sums, 0xff, sums.size() * sizeof(float)), "poison") &&
                  (chosen->kernel<<<1, kThreads>>>(d_src, d_sums), check(cudaGetLastError(), "launch")) &&
                  check(cudaDeviceSynchronize(), "kernel") &&
                  check(cudaMemcpy(sums.data(), d_sums, sums.size() * sizeof(float), cudaMemcpyDeviceToHost), "copy out");
  if (!ok) return 4;
  const bool right = sums == expected;
  std::printf("ring_racecheck %s: sums %s\n", chosen->name, right ? "right" : "WRONG");
  return right ? 0 : 1;
}
