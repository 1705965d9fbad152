// tkprobe-bench: the DSL's kernels under Google Benchmark, so a kernel developer gets its JSON
// output and compare tooling (benchmark's compare.py). Each iteration is timed with CUDA events
// (UseManualTime); the TFLOP/s counter is the work over that time. Without a GPU every benchmark
// says so (SkipWithError) and the binary exits 0.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/attention/attention.hpp"
#include "kernels/gemm/gemm.hpp"
#include "probes/common/attention_reference.hpp"
#include "probes/common/cublaslt_gemm.hpp"
#include "probes/common/tensor_types.hpp"
#include "src/device_buffer.hpp"

namespace {

using bf16 = __nv_bfloat16;

// Random bf16 operands, drawn fresh for each run (tensor::random_element: non-zero).
std::vector<std::uint16_t> random_operand(std::size_t count) {
  std::mt19937_64 rng(std::random_device{}());
  std::vector<std::uint16_t> out(count);
  for (auto& v : out) v = static_cast<std::uint16_t>(tkprobe::tensor::random_element(tkprobe::tensor::DType::bf16, rng).bits);
  return out;
}

bool have_gpu(benchmark::State& state) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    state.SkipWithError("no CUDA device");
    return false;
  }
  return true;
}

// Times `launch` once per iteration with CUDA events around it.
template <class Launch>
void time_launches(benchmark::State& state, const Launch& launch, double flops) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  launch();  // warm-up
  for (auto _ : state) {
    cudaEventRecord(start);
    launch();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    state.SetIterationTime(ms / 1e3);
  }
  state.counters["TFLOP/s"] = benchmark::Counter(flops / 1e12 * state.iterations(), benchmark::Counter::kIsRate);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

template <class Kernel>
void bench_gemm(benchmark::State& state) {
  if (!have_gpu(state)) return;
  const int size = static_cast<int>(state.range(0));
  const gemm::Shape s{size, size, size};
  tkprobe::DeviceBuffer<std::uint16_t> a(std::size_t(size) * size), b(a.size()), c(a.size());
  a.upload(random_operand(a.size()));
  b.upload(random_operand(b.size()));
  const Kernel kernel(reinterpret_cast<const bf16*>(a.get()), reinterpret_cast<const bf16*>(b.get()),
                      reinterpret_cast<bf16*>(c.get()), s);
  time_launches(state, [&] { kernel(nullptr); }, 2.0 * size * size * double(size));
}

// The attention forward on `tkprobe attention`'s sweep (attention_check::sweep(), argument 1 its
// index; argument 0 the kernel), ~N(0, 1) inputs drawn on the GPU (a fresh seed per run).
void bench_attention(benchmark::State& state) {
  if (!have_gpu(state)) return;
  const auto kernel = state.range(0) == 0 ? attention::Kernel::wgmma : attention::Kernel::mma_sync;
  const attention::Shape s = tkprobe::attention_check::sweep()[state.range(1)];
  state.SetLabel("B=" + std::to_string(s.batch) + " H=" + std::to_string(s.heads) + " N=" + std::to_string(s.seq) +
                 " D=" + std::to_string(s.head_dim) + (s.causal ? " causal" : ""));
  const std::size_t q_elements = std::size_t(s.batch) * s.heads * s.seq * s.head_dim;
  const std::size_t kv_elements = q_elements / s.heads * s.kv_heads;
  tkprobe::DeviceBuffer<bf16> q(q_elements), k(kv_elements), v(kv_elements), o(q_elements);
  tkprobe::DeviceBuffer<float> lse(q_elements / s.head_dim);
  std::mt19937_64 rng(std::random_device{}());
  for (auto* x : {&q, &k, &v}) tkprobe::attention_check::fill_normal(x->get(), x->size(), rng(), nullptr);
  const attention::Forward forward({q.get(), k.get(), v.get(), o.get(), lse.get()}, s, kernel);
  time_launches(state, [&] { forward(nullptr); }, attention::flops(s));
}

BENCHMARK(bench_attention)
    ->Name("attention")
    ->Apply([](benchmark::internal::Benchmark* b) {
      for (int kernel : {0, 1})
        for (int shape = 0; shape < int(tkprobe::attention_check::sweep().size()); ++shape) b->Args({kernel, shape});
    })
    ->ArgNames({"mma_sync", "shape"})
    ->UseManualTime();
BENCHMARK_TEMPLATE(bench_gemm, gemm::Gemm)->Name("gemm/tk")->Arg(4096)->Arg(8192)->UseManualTime();
BENCHMARK_TEMPLATE(bench_gemm, tkprobe::CublasLtGemm)->Name("gemm/cublaslt")->Arg(4096)->Arg(8192)->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
