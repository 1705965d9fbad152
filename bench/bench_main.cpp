// tkprobe-bench: the DSL's kernels under Google Benchmark, so a kernel developer gets its JSON
// output and compare tooling (benchmark's compare.py). Before timing, each kernel runs once on a
// poisoned output that is checked against a reference (cuBLASLt for the GEMMs, each other; the fp32
// reference for attention); a failed check or CUDA error skips the benchmark with the reason, so it
// never becomes a figure. Each iteration is timed with CUDA events (UseManualTime); the TFLOP counter
// is a rate (benchmark prints it per second). Without a GPU every benchmark says so and the binary
// exits 0.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/reference.hpp"
#include "kernels/gemm/gemm.hpp"
#include "probes/measure/tensor_types.hpp"
#include "probes/peers/cublaslt_gemm.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"

namespace {

using bf16 = __nv_bfloat16;
constexpr double kMaxRelError = 1e-2;  // bf16 outputs: 1e-3..1e-2 from rounding; a wrong tile gives ~1

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

// One launch, its errors surfaced: a launch that failed must not be timed as if it ran.
template <class Launch>
void checked_launch(const Launch& launch) {
  launch();
  TK_CUDA(cudaGetLastError());
}

// Times `launch` once per iteration with CUDA events around it.
template <class Launch>
void time_launches(benchmark::State& state, const Launch& launch, double flops) {
  cudaEvent_t start, stop;
  TK_CUDA(cudaEventCreate(&start));
  TK_CUDA(cudaEventCreate(&stop));
  checked_launch(launch);  // warm-up
  for (auto _ : state) {
    TK_CUDA(cudaEventRecord(start));
    checked_launch(launch);
    TK_CUDA(cudaEventRecord(stop));
    TK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    TK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(ms / 1e3);
  }
  state.counters["TFLOP"] = benchmark::Counter(flops / 1e12 * double(state.iterations()), benchmark::Counter::kIsRate);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

// Runs `body`; a CUDA error or a failed check skips the benchmark with the reason.
template <class Body>
void guarded(benchmark::State& state, const Body& body) {
  if (!have_gpu(state)) return;
  try {
    body();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void require(bool passed, const std::string& what) {
  if (!passed) throw std::runtime_error(what);
}

// C = A B^T by `Kernel`, checked against the other implementation on the same operands, then timed.
template <class Kernel, class Other>
void bench_gemm(benchmark::State& state, int size) {
  guarded(state, [&] {
    const gemm::Shape s{size, size, size};
    tkprobe::DeviceBuffer<std::uint16_t> a(std::size_t(size) * size), b(a.size()), c(a.size());
    a.upload(random_operand(a.size()));
    b.upload(random_operand(b.size()));
    const auto* a_ptr = reinterpret_cast<const bf16*>(a.get());
    const auto* b_ptr = reinterpret_cast<const bf16*>(b.get());
    auto* c_ptr = reinterpret_cast<bf16*>(c.get());
    const Other other(a_ptr, b_ptr, c_ptr, s);
    const Kernel kernel(a_ptr, b_ptr, c_ptr, s);
    c.poison();
    checked_launch([&] { other(nullptr); });
    const auto expected = c.download();
    c.poison();
    checked_launch([&] { kernel(nullptr); });
    const double error = tkprobe::tensor::relative_error_bf16(c.download(), expected);
    require(error < kMaxRelError, "C disagrees with the other GEMM's: relative error " + std::to_string(error));
    time_launches(state, [&] { kernel(nullptr); }, 2.0 * size * size * double(size));
  });
}

// The attention forward on one shape of `tkprobe attention`'s sweep, ~N(0, 1) inputs drawn on the
// GPU (a fresh seed per run), checked against the fp32 reference before timing.
template <attention::Kernel K>
void bench_attention(benchmark::State& state, attention::Shape s) {
  guarded(state, [&] {
    namespace check = tkprobe::attention_check;
    const std::size_t q_elements = std::size_t(s.batch) * s.heads * s.seq * s.head_dim;
    const std::size_t kv_elements = q_elements / s.heads * s.kv_heads;
    tkprobe::DeviceBuffer<bf16> q(q_elements), k(kv_elements), v(kv_elements), o(q_elements);
    tkprobe::DeviceBuffer<float> lse(q_elements / s.head_dim), o_ref(q_elements), lse_ref(lse.size());
    std::mt19937_64 rng(std::random_device{}());
    for (auto* x : {&q, &k, &v}) check::fill_normal(x->get(), x->size(), rng(), nullptr);
    check::reference_forward(q.get(), k.get(), v.get(), o_ref.get(), lse_ref.get(), s, nullptr);
    const attention::Forward forward({q.get(), k.get(), v.get(), o.get(), lse.get()}, s, K);
    o.poison();
    lse.poison();
    checked_launch([&] { forward(nullptr); });
    const auto e = check::compare_to_reference(o.get(), lse.get(), o_ref.get(), lse_ref.get(), s, nullptr);
    require(e.rel_error < kMaxRelError && e.lse_error < kMaxRelError,
            "O or LSE disagrees with the fp32 reference: " + std::to_string(e.rel_error) + ", " +
                std::to_string(e.lse_error));
    time_launches(state, [&] { forward(nullptr); }, attention::flops(s));
  });
}

// "B16_H32_N1024_D64_causal": the shape in a benchmark's name, so filters and compare.py can use it.
std::string shape_name(const attention::Shape& s) {
  return fmt::format("B{}_H{}_N{}_D{}{}", s.batch, s.heads, s.seq, s.head_dim, s.causal ? "_causal" : "");
}

// One benchmark per kernel and shape, named for what it runs: attention/wgmma/B16_H32_N1024_D64_causal,
// gemm/tk/4096.
void register_benchmarks() {
  for (const attention::Shape& s : tkprobe::attention_check::sweep()) {
    benchmark::RegisterBenchmark(fmt::format("attention/wgmma/{}", shape_name(s)).c_str(),
                                 bench_attention<attention::Kernel::wgmma>, s)
        ->UseManualTime();
    benchmark::RegisterBenchmark(fmt::format("attention/mma-sync/{}", shape_name(s)).c_str(),
                                 bench_attention<attention::Kernel::mma_sync>, s)
        ->UseManualTime();
  }
  for (int size : {4096, 8192}) {
    benchmark::RegisterBenchmark(fmt::format("gemm/tk/{}", size).c_str(), bench_gemm<gemm::Gemm, tkprobe::CublasLtGemm>,
                                 size)
        ->UseManualTime();
    benchmark::RegisterBenchmark(fmt::format("gemm/cublaslt/{}", size).c_str(),
                                 bench_gemm<tkprobe::CublasLtGemm, gemm::Gemm>, size)
        ->UseManualTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
