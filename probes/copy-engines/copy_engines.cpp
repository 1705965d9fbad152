// copy-engines: what moving a tensor from global to shared memory costs the SM, by engine.
//
// A 1 GiB bf16 tensor (17x the H200's L2) streams box by box through a ring of shared-memory
// stages, moved by the TMA (one thread issues cp.async.bulk.tensor; mbarriers say when a stage
// has landed and when it is free), by cp.async (every thread copies 16 bytes at a time), or by
// plain loads into registers and stores to shared memory (the fallback). Every box is read back
// from shared memory and XORed into a checksum that must equal the host's XOR of the fill pattern.
// Per box and CTAs per SM (fixed by padding shared memory): TB/s against the HBM ceiling
// bandwidth compares to, registers per thread, and SASS instructions issued per KiB moved
// (counted per warp by CUPTI where available; the read-back is the same work for every engine).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <map>
#include <optional>

#include "probes/copy-engines/copy_engines_kernels.hpp"
#include "probes/copy-engines/metrics.hpp"
#include "probes/measure/tensor_types.hpp"
#include "probes/timed_kernels/bandwidth_kernels.hpp"
#include "src/counters.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"
#include "src/residency.hpp"

namespace metric = tkprobe::probe_metrics::copy_engines;  // this probe's metrics.json

namespace tkprobe {
namespace {

namespace ce = copy_engines;
using ce::Engine;

constexpr std::size_t kTensorBytes = std::size_t(1) << 30;
constexpr int kMaxCtasPerSm = 32;  // Hopper keeps at most 32 CTAs resident on an SM

const std::vector<std::string> kBoxes{"64x64", "128x64", "256x64"}, kQuickBoxes{"64x64", "128x64"};
const std::vector<int> kCtasPerSm{1, 2, 4}, kQuickCtasPerSm{1, 2};

// The box a --box entry names; throws UsageError saying what the TMA and the 128B swizzle take.
tma::Box parse_box(const std::string& text) {
  const auto shape = tensor::parse_shape(text);
  if (!shape || shape->first > ce::kMaxBoxDim || shape->second > ce::kMaxBoxDim) {
    throw UsageError(
        fmt::format("--box {}: give ROWSxCOLS in bf16 elements, each from 1 to {} (the TMA's box limit), "
                    "e.g. 128x64",
                    text, ce::kMaxBoxDim));
  }
  const tma::Box box{shape->first, shape->second};
  const int inner = ce::inner_bytes(box);
  if (inner != ce::kSwizzleSpan) {
    // A narrower box still takes a full span per row in shared memory (tma-swizzle measures
    // it), so every engine's stage is the span wide.
    throw UsageError(fmt::format(
        "--box {}: the inner extent ({} x {} B = {} B) must be the 128B swizzle's span, {} B (COLS = {}): the TMA "
        "pads narrower rows to the span in shared memory",
        text, box.cols, ce::kElementBytes, inner, ce::kSwizzleSpan, ce::kSwizzleSpan / ce::kElementBytes));
  }
  if (ce::stage_bytes(box) % ce::kSwizzleAtom) {
    throw UsageError(fmt::format("--box {}: a box must fill whole {}-byte swizzle atoms: give ROWS a multiple of {}",
                                 text, ce::kSwizzleAtom, ce::kSwizzleAtom / ce::kSwizzleSpan));
  }
  return box;
}

std::string describe(tma::Box b) { return fmt::format("{}x{}", b.rows, b.cols); }

// The tensor every row streams, filled once with bandwidth's hash pattern (fresh seed), and the
// XOR the host expects a pass over each prefix a box shape covers to return.
struct Source {
  explicit Source(ProbeContext& ctx)
      : seed(static_cast<std::uint32_t>(ctx.rng())), words(kTensorBytes / sizeof(uint4)), sink(1) {
    bandwidth::fill(words.get(), words.size(), seed, ctx.harness.stream());
  }
  std::uint32_t expected_xor(std::size_t bytes) {
    auto [at, fresh] = xors.try_emplace(bytes);
    if (fresh) at->second = bandwidth::pattern_xor(bytes / sizeof(uint4), seed);
    return at->second;
  }
  std::uint32_t seed;
  DeviceBuffer<uint4> words;
  DeviceBuffer<std::uint32_t> sink;
  std::map<std::size_t, std::uint32_t> xors;
};

// An engine's fastest row, for the findings.
struct Best {
  double tbps = 0, pct_ceiling = 0;
  std::string config;
  int registers = 0, copying_threads = 0, threads = 0;
  std::optional<double> instructions_per_kib;
};

class CopyEngines final : public Probe {
 public:
  std::string name() const override { return "copy-engines"; }
  std::string summary() const override {
    return "Global->shared by TMA, cp.async or warp loads: TB/s vs HBM, registers, instructions per KiB";
  }
  std::vector<RowNeeds> row_needs() const override { return {{"TMA rows", kTmaNeeds}}; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--box", boxes_,
                   "Boxes ROWSxCOLS of bf16: COLS = 64 (the 128B swizzle span), ROWS a multiple of 8 (default "
                   "64x64,128x64,256x64; --quick 64x64,128x64)")
        ->delimiter(',');
    cmd.add_option("--ctas-per-sm", ctas_per_sm_,
                   "CTAs per SM, set by padding shared memory (default 1,2,4; --quick 1,2)")
        ->delimiter(',');
    cmd.add_option("--engine", engine_, "tma, cp-async, warp or all (default all)");
  }
  void validate() const override {
    engines();
    boxes(false);
    for (int c : ctas_per_sm_) {
      if (c < 1 || c > kMaxCtasPerSm) {
        throw UsageError(fmt::format("--ctas-per-sm {}: give CTAs per SM from 1 to {}", c, kMaxCtasPerSm));
      }
    }
  }

  void run(ProbeContext& ctx) override {
    Source source(ctx);
    std::map<Engine, Best> best;
    for (const tma::Box box : boxes(ctx.options.quick)) {
      for (int ctas : ctas_per_sm_.empty() ? (ctx.options.quick ? kQuickCtasPerSm : kCtasPerSm) : ctas_per_sm_) {
        for (Engine e : engines()) {
          const auto row = measure(ctx, source, e, box, ctas);
          if (row && row->tbps > best[e].tbps) best[e] = *row;
        }
      }
    }
    report_findings(ctx, best);
  }

 private:
  std::vector<std::string> boxes_;
  std::vector<int> ctas_per_sm_;
  std::string engine_ = "all";
  InstructionCounts counts_;

  std::vector<tma::Box> boxes(bool quick) const {
    std::vector<tma::Box> out;
    for (const auto& text : boxes_.empty() ? (quick ? kQuickBoxes : kBoxes) : boxes_) out.push_back(parse_box(text));
    return out;
  }

  std::vector<Engine> engines() const {
    std::vector<Engine> out;
    for (Engine e : ce::kEngines) {
      if (engine_ == "all" || engine_ == ce::name(e)) out.push_back(e);
    }
    if (out.empty()) throw UsageError(fmt::format("--engine {}: give tma, cp-async, warp or all", engine_));
    return out;
  }

  // The kernels' parameters for one box shape: the tensor it tiles and (TMA) its tensor map.
  static ce::CopyParams copy_params(Engine e, Source& source, tma::Box box, const ce::Tensor& tensor,
                                    BlockSpan* spans) {
    ce::CopyParams p{};
    p.src = reinterpret_cast<const std::uint8_t*>(source.words.get());
    p.row_bytes = tensor.row_bytes;
    p.box_rows = box.rows;
    p.box_cols = box.cols;
    p.tiles = tensor.tiles;
    p.sink = source.sink.get();
    p.spans = spans;
    if (e == Engine::tma) {
      const CUresult r = tma::encode_map(&p.map, source.words.get(), ce::kElementBytes, tensor.extent, box,
                                         CU_TENSOR_MAP_SWIZZLE_128B);
      if (r != CUDA_SUCCESS) {
        throw CudaError(fmt::format("cuTensorMapEncodeTiled refused box {}: {}", describe(box), tma::result_name(r)));
      }
    }
    return p;
  }

  // One row: the engine, box and CTAs per SM timed, checked and costed; nothing when the CTAs
  // do not fit on an SM (the row says why).
  std::optional<Best> measure(ProbeContext& ctx, Source& source, Engine e, tma::Box box, int ctas) {
    const ce::Tensor tensor = ce::tensor_in(kTensorBytes, box);
    Result r(name(), {{"engine", ce::name(e)},
                      {"box", describe(box)},
                      {"ctas_per_sm", ctas},
                      {"stages", ce::kStages},
                      {"bytes", tensor.bytes}});
    if (std::string why = e == Engine::tma ? why_not_runnable(kTmaNeeds, ctx.device) : ""; !why.empty()) {
      r.status = Status::skipped;
      r.reason = std::move(why);
      ctx.add(std::move(r));
      return std::nullopt;
    }
    const int threads = ce::threads_per_cta(e);
    const Residency res = plan_residency(ce::kernel(e), threads, ctas, ce::smem_bytes(e, box), ctx.device);
    if (res.blocks_per_sm != ctas) {
      r.status = Status::skipped;
      r.reason =
          fmt::format("{} CTAs of {} threads fit per SM, not {} ({} B of shared memory each: {} stages of {} B)",
                      res.blocks_per_sm, threads, ctas, ce::smem_bytes(e, box), ce::kStages, ce::stage_bytes(box));
      ctx.add(std::move(r));
      return std::nullopt;
    }
    const int grid = ctas * ctx.device.sms;
    DeviceBuffer<BlockSpan> spans(grid);
    const ce::CopyParams p = copy_params(e, source, box, tensor, spans.get());
    const auto launch = [&](cudaStream_t s) { ce::launch(e, p, grid, res.dynamic_smem, s); };
    const Measurement m =
        ctx.harness.time_kernel_rate(fmt::format("copy-engines {} box {} {} CTAs/SM", ce::name(e), describe(box), ctas),
                                     launch, double(tensor.bytes) / 1e12);

    source.sink.poison(0);
    launch(ctx.harness.stream());
    const std::uint32_t got = source.sink.download()[0], want = source.expected_xor(tensor.bytes);
    const int concurrent = concurrent_blocks_per_sm(spans.download());
    const auto per_kib = counts_.per_kib([&] { launch(ctx.harness.stream()); }, double(tensor.bytes));

    const double ceiling = hbm_ceiling_tbps(ctx.device);
    const Best row{m.stats.median,
                   100 * m.stats.median / ceiling,
                   fmt::format("box {}, {} CTAs/SM", describe(box), ctas),
                   res.registers_per_thread,
                   ce::copying_threads(e, box),
                   threads,
                   per_kib};
    r.metric(metric::tbps, m.stats, "TB/s", Better::higher);
    r.value(metric::ceiling_tbps, ceiling);
    r.value(metric::pct_ceiling, row.pct_ceiling);
    r.value(metric::registers_per_thread, row.registers);
    r.value(metric::warp_instructions_per_kib, per_kib ? Json(*per_kib) : Json(nullptr));
    r.value(metric::copying_threads, row.copying_threads);
    r.value(metric::threads_per_cta, threads);
    r.value(metric::occupancy_pct, 100 * res.occupancy);
    r.value(metric::concurrent_ctas_per_sm, concurrent);
    r.checked({{"what", "XOR of every word read back from shared memory vs the host's XOR of the tensor"},
               {"value", got},
               {"expected", want}},
              got == want);
    r.telemetry = m.telemetry;
    ctx.add(std::move(r));
    return row;
  }

  void report_findings(ProbeContext& ctx, const std::map<Engine, Best>& best) {
    for (const auto& [e, b] : best) {
      ctx.finding(name(), fmt::format("{}: best {:.2f} TB/s ({:.1f}% of the HBM ceiling) with {}; {} of {} threads per "
                                      "CTA copy, {} registers/thread, {} SASS instructions issued per KiB (counted "
                                      "per warp)",
                                      ce::name(e), b.tbps, b.pct_ceiling, b.config, b.copying_threads, b.threads,
                                      b.registers, InstructionCounts::text(b.instructions_per_kib)));
    }
    if (best.count(Engine::tma) && best.count(Engine::warp)) {
      const Best &tma = best.at(Engine::tma), &warp = best.at(Engine::warp);
      const std::string instructions =
          tma.instructions_per_kib && warp.instructions_per_kib
              ? fmt::format("{:.2f}x", *tma.instructions_per_kib / *warp.instructions_per_kib)
              : "n/a";
      ctx.finding(name(),
                  fmt::format("TMA vs warp loads, each at its best: {:.2f}x the TB/s, {:.2f}x the registers per "
                              "thread, {} the warp instructions per KiB",
                              tma.tbps / warp.tbps, double(tma.registers) / warp.registers, instructions));
    }
    if (const auto note = counts_.unavailable_finding()) ctx.finding(name(), *note);
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(CopyEngines);

}  // namespace tkprobe
