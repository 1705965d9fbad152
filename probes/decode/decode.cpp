// decode: attention decode over a paged KV cache (kernels/attention/decode.hpp), the DSL's
// portable kernel, against the HBM read ceiling measured in the same run.
//
// First the ceiling: a streaming read of a buffer many times the L2 (the bandwidth probe's
// kernels, the better of 4 and 8 loads in flight), its XOR checked. Then per (batch, keys, cache):
// each sequence's keys in pages scattered over the pool in random order, fresh ~N(0, 1) bf16 inputs
// (an e4m3 cache: those quantized with a power-of-two scale per kv head), outputs poisoned, the step timed with CUDA
// events as GB/s of cache read (the K and V bytes of every key, counted first), that as % of the ceiling (the judged
// figure: it holds still where the power state moves GB/s), TFLOP/s, and O and LSE of every row against the fp32
// reference on each sequence alone. Each sample starts as a serving step does, its cache out of the L2 (other layers
// ran in between), and the events time the GPU alone: a step of a few microseconds is launched while a spin
// holds the stream, so the host's path to it is not timed; the SM clock is bracketed around it.
#include "kernels/attention/decode.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention/reference_fp8.hpp"
#include "kernels/attention/reference_varlen.hpp"
#include "probes/decode/metrics.hpp"
#include "probes/decode/step_fit.hpp"
#include "probes/measure/clock_bracket.hpp"
#include "probes/timed_kernels/bandwidth_kernels.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::decode;  // this probe's metrics.json

namespace tkprobe {
namespace {

namespace dec = attention::decode;
namespace bw = bandwidth;
using bf16 = __nv_bfloat16;

// A serving model's attention (Llama-3 8B: 32 query heads over 8 key/value heads, D = 128), one
// new token per sequence, 64-token pages; batch x keys from one long sequence to 256 short ones.
// The sweep runs each shape with a bf16 cache, then an e4m3 one (half the bytes to read).
constexpr int kHeads = 32, kKvHeads = 8, kHeadDim = 128, kPageSize = 64;
struct Shape2d {
  int batch, keys;
};
struct Point {
  int batch, keys;
  dec::Cache cache;
};
constexpr Shape2d kSweep[] = {{1, 8192},  {1, 32768}, {1, 131072}, {16, 8192}, {16, 32768},
                              {64, 2048}, {64, 8192}, {256, 1024}, {256, 4096}};
// Two lengths of one sequence, so a quick run fits a step's fixed cost too.
constexpr Point kQuick[] = {{1, 16384, dec::Cache::bf16},
                            {1, 65536, dec::Cache::bf16},
                            {32, 1000, dec::Cache::bf16},
                            {32, 1000, dec::Cache::e4m3}};
constexpr dec::Cache kCaches[] = {dec::Cache::bf16, dec::Cache::e4m3};

constexpr const char* cache_name(dec::Cache c) { return c == dec::Cache::e4m3 ? "e4m3" : "bf16"; }
constexpr std::size_t kCeilingL2s = 16;  // the ceiling's buffer: this many L2s, at least 1 GiB
constexpr std::size_t kEvictL2s = 2;     // a sample's eviction reads this many L2s of the ceiling's buffer
constexpr std::uint64_t kHoldNs = 50'000;  // longer than the host takes to enqueue a step (two launches, two events)
constexpr double kMaxRelError = 5e-3, kMaxRowError = 1e-2, kMaxLseError = 1e-2;  // the forward's bounds
// The share of the HBM ceiling a long cache's step should read at: the batch-1 fit's finding says
// from how many keys it does.
constexpr double kBarShare = 0.85;

// K and V bytes of every cached key: what the step must read.
double cache_bytes(const dec::Shape& s, int keys) {
  return 2.0 * s.batch * keys * s.kv_heads * s.head_dim * dec::cache_element_bytes(s);
}

// 4 T H D per attended key per sequence (two products of 2 D each), all keys attended (T = 1).
double flops(const dec::Shape& s, int keys) { return 4.0 * s.batch * s.q_tokens * s.heads * keys * s.head_dim; }

// One step's inputs and outputs on the GPU: each sequence's pages drawn from the pool in random
// order; an e4m3 cache quantized from the bf16 one (which it then stands in for), K's and V's
// scales different per head and from each other.
struct Step {
  Step(const dec::Shape& shape, int keys, std::mt19937_64& rng, cudaStream_t stream)
      : s(shape),
        lengths(s.batch, keys),
        q(std::size_t(s.batch) * s.q_tokens * s.heads * s.head_dim),
        o(q.size()),
        k(std::size_t(s.pages) * s.page_size * s.kv_heads * s.head_dim),
        v(k.size()),
        table(std::size_t(s.batch) * s.pages_per_seq),
        lengths_d(lengths.size()),
        lse(std::size_t(s.batch) * s.heads * s.q_tokens) {
    std::vector<int> pages(s.pages);
    std::iota(pages.begin(), pages.end(), 0);
    std::shuffle(pages.begin(), pages.end(), rng);
    table.upload(pages);
    lengths_d.upload(lengths);
    for (const DeviceBuffer<bf16>* x : {&q, &k, &v}) attention_check::fill_normal(x->get(), x->size(), rng(), stream);
    if (s.cache == dec::Cache::e4m3) e4m3.emplace(k.get(), v.get(), k.size(), s.kv_heads, s.head_dim, stream);
  }
  dec::Tensors tensors() const {
    if (s.cache == dec::Cache::bf16)
      return {q.get(), k.get(), v.get(), table.get(), lengths_d.get(), o.get(), lse.get()};
    return {q.get(), e4m3->k.get(), e4m3->v.get(),       table.get(),        lengths_d.get(),
            o.get(), lse.get(),     e4m3->k_scale.get(), e4m3->v_scale.get()};
  }

  dec::Shape s;
  std::vector<int> lengths;
  DeviceBuffer<bf16> q, o, k, v;
  DeviceBuffer<int> table, lengths_d;
  DeviceBuffer<float> lse;
  std::optional<attention_check::E4m3KvCache> e4m3;
};

class DecodeProbe final : public Probe {
 public:
  std::string name() const override { return "decode"; }
  std::string summary() const override {
    return "Attention decode over a paged KV cache (the DSL's split-KV kernel): GB/s of cache read against the HBM "
           "read ceiling measured in the same run, error vs fp32";
  }
  Requirements needs() const override { return {}; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--batch", batch_, "Sequences (with --keys; default: the sweep)");
    cmd.add_option("--keys", keys_, "Cached keys per sequence");
    cmd.add_option("--q-tokens", q_tokens_, "New tokens per sequence, attending each other causally (default 1)");
    cmd.add_option("--page-size", page_size_, "Tokens per cache page (default 64)");
    cmd.add_option("--splits", splits_, "Key splits per sequence, 1 to 64 (default: the kernel's rule)");
    cmd.add_option("--cache", cache_, "The KV cache's type: bf16 or e4m3 (default: each in turn)");
  }
  void validate() const override {
    if (batch_.has_value() != keys_.has_value())
      throw UsageError("--batch, --keys: give both, or neither for the sweep");
    if (splits_ && (*splits_ < 1 || *splits_ > dec::kMaxSplits)) {
      throw UsageError(fmt::format("--splits {}: give 1 to {}", *splits_, dec::kMaxSplits));
    }
    if (keys_ && *keys_ < 1) throw UsageError(fmt::format("--keys {}: give at least 1", *keys_));
    if (page_size_ && *page_size_ < 1) throw UsageError(fmt::format("--page-size {}: give at least 1", *page_size_));
    if (cache_ && *cache_ != "bf16" && *cache_ != "e4m3")
      throw UsageError(fmt::format("--cache {}: give bf16 or e4m3", *cache_));
    if (batch_ && static_cast<long long>(*batch_) * *keys_ > std::numeric_limits<int>::max()) {
      throw UsageError(fmt::format("--batch {} --keys {}: at most {} cached keys in all (the pool's rows are ints)",
                                   *batch_, *keys_, std::numeric_limits<int>::max()));
    }
    for (const Point& p : points(false)) {
      if (const std::string why = dec::refusal(shape(p)); !why.empty()) {
        throw UsageError(fmt::format("--batch {} --keys {}: {}", p.batch, p.keys, why));
      }
    }
  }

  void run(ProbeContext& ctx) override {
    HbmBuffer hbm(ctx);
    const double ceiling_gbps = measure_ceiling(ctx, hbm);
    std::map<dec::Cache, std::vector<decode_fit::Sample>> one_sequence;  // the batch-1 steps, by cache
    for (const Point& p : points(ctx.options.quick)) {
      const decode_fit::Sample step = measure(ctx, hbm, p, ceiling_gbps);
      if (p.batch == 1) one_sequence[p.cache].push_back(step);
    }
    for (const auto& [cache, steps] : one_sequence) add_fit_finding(ctx, cache, steps, ceiling_gbps);
  }

 private:
  std::optional<int> batch_, keys_, q_tokens_, page_size_, splits_;
  std::optional<std::string> cache_;

  bool runs(dec::Cache c) const { return !cache_ || *cache_ == cache_name(c); }

  std::vector<Point> points(bool quick) const {
    std::vector<Point> out;
    const auto add = [&](Shape2d p) {
      for (dec::Cache c : kCaches)
        if (runs(c)) out.push_back({p.batch, p.keys, c});
    };
    if (batch_) {
      add({*batch_, *keys_});
    } else if (quick) {
      for (const Point& p : kQuick)
        if (runs(p.cache)) out.push_back(p);
    } else {
      for (Shape2d p : kSweep) add(p);
    }
    return out;
  }

  dec::Shape shape(const Point& p) const {
    const int page = page_size_.value_or(kPageSize), per_seq = (p.keys - 1) / page + 1;  // keys >= 1: no overflow
    const bool causal = q_tokens_.value_or(1) > 1;
    return {p.batch, q_tokens_.value_or(1), kHeads, kKvHeads, kHeadDim, page,
            per_seq, p.batch * per_seq,     causal, 0,        p.cache};
  }

  // A buffer many times the L2, its words a pattern whose XOR the host knows: the ceiling reads it
  // whole, and each decode sample first reads kEvictL2s L2s of it (clean lines, so the step's
  // misses write nothing back) to leave none of the step's cache in the L2.
  struct HbmBuffer {
    explicit HbmBuffer(ProbeContext& ctx)
        : bytes(std::max<std::size_t>(kCeilingL2s * ctx.device.l2_bytes, std::size_t(1) << 30)),
          count(bytes / sizeof(uint4)),
          evict_count(kEvictL2s * ctx.device.l2_bytes / sizeof(uint4)),
          resident(ctx.device.sms * bw::kBlocksPerSm),
          seed(static_cast<std::uint32_t>(ctx.rng())),
          src(count),
          sink(1) {
      bw::fill(src.get(), count, seed, ctx.harness.stream());
    }
    void read(const bw::Variant& variant, std::size_t words, cudaStream_t s) const {
      const int blocks = bw::blocks_for(variant, words, resident);
      bw::launch_stream(bw::Stream::read, variant, src.get(), nullptr, words, seed, sink.get(), blocks, 0, s);
    }
    void evict_l2(cudaStream_t s) const { read(kEvictRead, evict_count, s); }

    static constexpr bw::Variant kEvictRead{8, bw::Hint::none, bw::Schedule::grid_stride};
    std::size_t bytes, count, evict_count;
    int resident;
    std::uint32_t seed;
    DeviceBuffer<uint4> src;
    DeviceBuffer<std::uint32_t> sink;
  };

  // The HBM read ceiling in GB/s: the better of the bandwidth probe's grid-stride reads, its own row.
  double measure_ceiling(ProbeContext& ctx, HbmBuffer& hbm) {
    std::optional<Measurement> best;
    std::optional<bw::Variant> best_variant;
    for (int in_flight : bw::kLoadsInFlight) {
      const bw::Variant variant{in_flight, bw::Hint::none, bw::Schedule::grid_stride};
      const Measurement m = ctx.harness.time_kernel_rate(
          fmt::format("decode ceiling: HBM read x{}", in_flight),
          [&](cudaStream_t s) { hbm.read(variant, hbm.count, s); }, double(hbm.bytes) / 1e9);
      if (!best || m.stats.median > best->stats.median) {
        best = m;
        best_variant = variant;
      }
    }
    hbm.sink.poison(0);
    hbm.read(*best_variant, hbm.count, ctx.harness.stream());
    const std::uint32_t got = hbm.sink.download()[0], expected = bw::pattern_xor(hbm.count, hbm.seed);
    // Which read won is a finding of the run, not part of the row's name: a name must not move between runs.
    Result r(name(), {{"row", "hbm read ceiling"}, {"bytes", hbm.bytes}});
    r.metric(metric::gbps, best->stats, "GB/s", Better::higher);
    r.value(metric::loads_in_flight, best_variant->loads_in_flight);
    r.telemetry = best->telemetry;
    r.not_judged("the bandwidth probe judges the HBM read; this row is the ceiling the decode rows divide by");
    r.checked({{"what", "XOR of every word read vs the host's"}, {"value", got}, {"expected", expected}},
              got == expected);
    ctx.add(std::move(r));
    return best->stats.median;
  }

  // A finding from the batch-1 steps of two or more lengths: the fixed cost of a step, the rate of
  // its reads beyond it, and from how many keys a sequence reads at kBarShare of the ceiling.
  void add_fit_finding(ProbeContext& ctx, dec::Cache cache, const std::vector<decode_fit::Sample>& steps,
                       double ceiling_gbps) const {
    const auto f = decode_fit::fit(steps);
    if (!f) return;
    const double ceiling = ceiling_gbps * 1e9, rate_share = f->bytes_per_second / ceiling;
    const double bytes = decode_fit::bytes_for_share(*f, ceiling, kBarShare);
    const double bytes_per_key = cache_bytes(shape({1, 1, cache}), 1);
    ctx.finding(name(),
                fmt::format("decode B=1 {}: over {} lengths, a step costs {:.1f} us plus its cache read at {:.0f} GB/s "
                            "({:.1f}% of the ceiling); {:.0f}% of the ceiling {}",
                            cache_name(cache), steps.size(), f->fixed_seconds * 1e6, f->bytes_per_second / 1e9,
                            100 * rate_share, 100 * kBarShare,
                            std::isinf(bytes) ? std::string("is beyond that rate")
                                              : fmt::format("from {:.0f}k keys on", bytes / bytes_per_key / 1024)));
  }

  // The step's bytes and median time, for the batch-1 fit.
  decode_fit::Sample measure(ProbeContext& ctx, const HbmBuffer& hbm, const Point& p, double ceiling_gbps) {
    const dec::Shape s = shape(p);
    const cudaStream_t stream = ctx.harness.stream();
    Step step(s, p.keys, ctx.rng, stream);
    const dec::Decode decode(step.tensors(), s, splits_.value_or(0));
    const double bytes = cache_bytes(s, p.keys);
    step.o.poison();
    step.lse.poison();
    SmClockBracket clock(ctx.device.sms);
    const ClockBracket cold_and_held{[&](cudaStream_t st) {
                                       hbm.evict_l2(st);
                                       clock.begin(st);
                                       hold_stream(st, kHoldNs);
                                     },
                                     [&](cudaStream_t st) { clock.end(st); }, clock.window()};
    const Measurement m = ctx.harness.time_kernel_rate(
        fmt::format("decode B={} keys={} {}", p.batch, p.keys, cache_name(p.cache)),
        [&](cudaStream_t st) { decode(st); }, bytes / 1e9, cold_and_held);
    Result r(name(), {{"batch", p.batch},
                      {"keys", p.keys},
                      {"cache", cache_name(p.cache)},
                      {"q_tokens", s.q_tokens},
                      {"heads", s.heads},
                      {"kv_heads", s.kv_heads},
                      {"head_dim", s.head_dim},
                      {"page_size", s.page_size}});
    r.metric(metric::gbps, m.stats, "GB/s", Better::higher);
    r.metric(metric::pct_hbm_ceiling, scaled(m.stats, 100 / ceiling_gbps), "%", Better::higher);
    r.primary = metric::pct_hbm_ceiling;
    r.value(metric::tflops, flops(s, p.keys) / (bytes / (m.stats.median * 1e9)) / 1e12);
    r.value(metric::splits, decode.splits());
    r.value(metric::cache_mib, bytes / (1 << 20));
    r.telemetry = m.telemetry;
    const auto e = attention_check::compare_decode_to_reference(step.tensors(), s, step.lengths, stream);
    r.value(metric::rel_error, e.rel_error);
    r.value(metric::lse_error, e.lse_error);
    r.value(metric::worst_row_error, e.worst_row_error);
    const bool passed = e.rel_error < kMaxRelError && e.worst_row_error < kMaxRowError && e.lse_error < kMaxLseError;
    r.checked({{"what", "O and LSE against the fp32 reference on each sequence's gathered pages"},
               {"value", e.rel_error},
               {"max", kMaxRelError},
               {"worst_row_error", e.worst_row_error},
               {"lse_error", e.lse_error}},
              passed);
    ctx.add(std::move(r));
    ctx.finding(name(),
                fmt::format("decode B={} keys={} {}: {:.0f} GB/s, {:.1f}% of the {:.0f} GB/s HBM read ceiling "
                            "({} split{}, {:.0f} MiB of cache)",
                            p.batch, p.keys, cache_name(p.cache), m.stats.median, 100 * m.stats.median / ceiling_gbps,
                            ceiling_gbps, decode.splits(), decode.splits() == 1 ? "" : "s", bytes / (1 << 20)));
    return {bytes, bytes / (m.stats.median * 1e9)};
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(DecodeProbe);

}  // namespace tkprobe
