// tma-reduce: the TMA's asynchronous bulk reduction into global memory against per-element atomics.
//
// A split-K GEMM or a backward pass summing partial results (dQ over key tiles, dK/dV over query
// heads) adds tiles into global memory. Hopper can do it without threads: one instruction hands a
// shared-memory tile to the copy engine, which adds it into global memory element by element
// (cp.reduce.async.bulk .add.f32). Here every block adds a 16 KiB f32 tile `passes` times, either so
// (one thread issues it) or by all 128 threads with red.global.add.f32, each block into its own
// tile or all into one (contention at L2). The figure is the bytes added per second; an untimed
// launch on a zeroed buffer is checked exactly (every element an integer count of additions).
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "probes/tma-reduce/tma_reduce_kernels.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace tkprobe {
namespace {

namespace tr = tma_reduce;

constexpr int kBlocksPerSm = 2;
constexpr int kPasses = 64, kQuickPasses = 16;

std::string method_name(tr::Method m) {
  return m == tr::Method::bulk ? "bulk (cp.reduce.async.bulk)" : "atomic (red.global)";
}

class TmaReduce final : public Probe {
 public:
  std::string name() const override { return "tma-reduce"; }
  std::string summary() const override {
    return "Adding f32 tiles into global memory: the TMA's bulk reduction against per-element atomics";
  }
  int min_cc() const override { return 90; }
  int max_cc() const override { return 90; }

  void run(ProbeContext& ctx) override {
    const int blocks = kBlocksPerSm * ctx.device.sms;
    const int passes = ctx.options.quick ? kQuickPasses : kPasses;
    for (const bool shared_target : {false, true}) {
      const tr::Launch l{blocks, shared_target ? 1 : blocks, passes};
      double rates[2] = {};
      for (tr::Method m : {tr::Method::bulk, tr::Method::atomic}) rates[int(m)] = measure(ctx, m, l);
      ctx.finding(name(), fmt::format("{}: the bulk reduction adds {:.2f} TB/s, atomics {:.2f} ({:.1f}x), with one "
                                      "instruction per 16 KiB tile instead of one per 128 bytes",
                                      shared_target ? "every block into one tile" : "each block into its own tile",
                                      rates[0], rates[1], rates[0] / rates[1]));
    }
  }

 private:
  double measure(ProbeContext& ctx, tr::Method m, const tr::Launch& l) {
    DeviceBuffer<float> dst(std::size_t(l.targets) * tr::kTileFloats);
    const cudaStream_t stream = ctx.harness.stream();
    TK_CUDA(cudaMemsetAsync(dst.get(), 0, dst.size() * sizeof(float), stream));
    tr::launch_reduce(m, l, dst.get(), stream);
    const long long wrong = count_wrong(dst.download(), l);
    const double bytes = double(l.blocks) * l.passes * tr::kTileBytes;
    const Measurement t = ctx.harness.time_kernel_rate(
        fmt::format("tma-reduce {} targets={}", method_name(m), l.targets),
        [&](cudaStream_t s) { tr::launch_reduce(m, l, dst.get(), s); }, bytes / 1e12);

    Result r(name(), {{"method", m == tr::Method::bulk ? "bulk" : "atomic"},
                      {"dtype", "f32"},
                      {"target", l.targets == 1 ? "one tile" : "own tile"},
                      {"blocks", l.blocks},
                      {"tile_bytes", tr::kTileBytes}});
    r.metric("tbps", t.stats, "TB/s", Better::higher);
    r.value("passes", l.passes);
    r.checked({{"what", "elements of an untimed launch on zeros that differ from the number of tiles added there"},
               {"value", wrong}},
              wrong == 0);
    r.telemetry = t.telemetry;
    ctx.add(std::move(r));
    return t.stats.median;
  }

  // Tile t received passes x (blocks b with b % targets == t) additions of 1.0: exact in f32.
  static long long count_wrong(const std::vector<float>& got, const tr::Launch& l) {
    long long wrong = 0;
    for (int t = 0; t < l.targets; ++t) {
      const int adders = l.blocks / l.targets + (t < l.blocks % l.targets ? 1 : 0);
      const float want = float(adders) * float(l.passes);
      for (int i = 0; i < tr::kTileFloats; ++i) wrong += got[std::size_t(t) * tr::kTileFloats + i] != want;
    }
    return wrong;
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(TmaReduce);

}  // namespace tkprobe
