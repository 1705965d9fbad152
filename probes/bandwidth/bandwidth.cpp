// bandwidth: how fast data moves at each level, against that level's ceiling.
//
// HBM: streaming read, write and copy of a buffer many times the L2, 16-byte accesses from every
// SM under two schedules, 4 or 8 in flight per thread, with and without an evict-first hint;
// copies also through the TMA and through cudaMemcpyAsync, the copy a user already has
// (ceiling: 2 transfers per memory clock x bus width).
// L2: a quarter-L2 buffer read again and again with ld.global.cg, which skips L1. Shared memory:
// every SM's 32 warps issue conflict-free 16-byte loads (ceiling: 32 banks x 4 B per clock per
// SM). Every figure's result is checked: reads against the host's XOR of the pattern, writes and
// copies word by word on the GPU.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>

#include "probes/bandwidth/bulk_copy_kernels.hpp"
#include "probes/bandwidth/metrics.hpp"
#include "probes/timed_kernels/bandwidth_kernels.hpp"
#include "probes/timed_kernels/l2_read.hpp"
#include "probes/timed_kernels/smem_banks_kernels.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::bandwidth;  // this probe's metrics.json

namespace tkprobe {
namespace {

namespace bw = bandwidth;

constexpr int kL2FootprintDivisor = 4;  // a quarter of L2: resident, with room for the rest
constexpr int kSmemBytesPerClock = 32 * 4;
constexpr int kMinSizeMib = 64;
constexpr int kMaxSizeMib = 32768;

class Bandwidth final : public Probe {
 public:
  std::string name() const override { return "bandwidth"; }
  std::string summary() const override {
    return "HBM read/write/copy, L2-resident read and shared-memory bandwidth, each against its ceiling";
  }
  std::vector<RowNeeds> row_needs() const override { return {{"TMA copy rows", kTmaNeeds}}; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--size", size_mib_, "HBM buffer in MiB, 64 to 32768 (default 1024; --quick 256)");
    cmd.add_option("--level", levels_, "Levels to measure: hbm, l2, smem (comma-separated; default all)")
        ->delimiter(',')
        ->check(CLI::IsMember({"hbm", "l2", "smem"}));
  }
  void validate() const override {
    if (size_mib_ && (*size_mib_ < kMinSizeMib || *size_mib_ > kMaxSizeMib)) {
      throw UsageError(fmt::format("--size {}: give {} to {} MiB (larger than L2; a source and a destination of that "
                                   "size fit on an 80 GB GPU)",
                                   *size_mib_, kMinSizeMib, kMaxSizeMib));
    }
  }

  void run(ProbeContext& ctx) override {
    if (measures("hbm")) {
      const std::size_t bytes = std::size_t(size_mib_.value_or(ctx.options.quick ? 256 : 1024)) << 20;
      if (bytes < 4 * static_cast<std::size_t>(ctx.device.l2_bytes)) {
        ctx.finding(name(), fmt::format("the {} MiB buffer is under 4x this GPU's L2: HBM rows may include L2 hits",
                                        bytes >> 20));
      }
      run_hbm(ctx, bytes);
    }
    if (measures("l2")) run_l2(ctx);
    if (measures("smem")) run_smem(ctx);
  }

 private:
  std::optional<int> size_mib_;
  std::vector<std::string> levels_{"hbm", "l2", "smem"};

  bool measures(std::string_view level) const {
    return std::find(levels_.begin(), levels_.end(), level) != levels_.end();
  }

  Result row(const std::string& level, const std::string& op, const Measurement& m, std::optional<double> ceiling) {
    Result r(name(), {{"level", level}, {"op", op}});
    r.metric(metric::tbps, m.stats, "TB/s", Better::higher);
    r.value(metric::ceiling_tbps, ceiling ? Json(*ceiling) : Json(nullptr));
    r.value(metric::pct_ceiling, ceiling ? Json(100 * m.stats.median / *ceiling) : Json(nullptr));
    r.telemetry = m.telemetry;
    return r;
  }

  // The HBM buffers every streaming row shares, and the XOR the host expects a read to return
  // (computed once: a pass over every word of the buffer).
  struct Hbm {
    Hbm(ProbeContext& ctx, std::size_t bytes_)
        : bytes(bytes_),
          count(bytes_ / sizeof(uint4)),
          seed(static_cast<std::uint32_t>(ctx.rng())),
          src(count),
          dst(count),
          sink(1),
          mismatches(1) {
      bw::fill(src.get(), count, seed, ctx.harness.stream());
      read_xor = bw::pattern_xor(count, seed);
    }
    std::size_t bytes, count;
    std::uint32_t seed, read_xor = 0;
    DeviceBuffer<uint4> src, dst;
    DeviceBuffer<std::uint32_t> sink;
    DeviceBuffer<unsigned long long> mismatches;
  };

  void run_hbm(ProbeContext& ctx, std::size_t bytes) {
    Hbm hbm(ctx, bytes);
    const double ceiling = hbm_ceiling_tbps(ctx.device);
    for (const auto op : {bw::Stream::read, bw::Stream::write, bw::Stream::copy}) {
      std::optional<std::pair<double, std::string>> best;
      for (bw::Schedule schedule : bw::kSchedules) {
        // One-shot tiles would end a read in ~65k blocks merging their checksums into one word,
        // which costs more than the read itself (measured: 1.4 TB/s): reads stay grid-stride.
        if (op == bw::Stream::read && schedule == bw::Schedule::tiles) continue;
        for (int in_flight : bw::kLoadsInFlight)
          for (bw::Hint hint : bw::kHints) {
            const double tbps = run_stream(ctx, op, {in_flight, hint, schedule}, hbm);
            const std::string variant = fmt::format("{}, {} loads in flight, hints {}", bw::name(schedule), in_flight,
                                                    bw::name(hint));
            if (!best || tbps > best->first) best.emplace(tbps, variant);
          }
      }
      if (op == bw::Stream::copy) {
        for (const bw::BulkVariant& v : bw::kBulkVariants) {
          if (std::string why = why_not_runnable(kTmaNeeds, ctx.device); !why.empty()) {
            Result r(name(), {{"level", "hbm"}, {"op", "copy"}, {"bytes", hbm.bytes}});
            r.params.update(bulk_params(v));  // as the row it stands for, so that compare pairs them
            r.status = Status::skipped;
            r.reason = std::move(why);
            ctx.add(std::move(r));
            continue;
          }
          const double tbps = run_bulk_copy(ctx, v, hbm);
          const std::string variant = fmt::format("the TMA (cp.async.bulk, {} KiB tiles, {} stages, {} CTAs per SM)",
                                                  v.tile_kib, v.stages, v.ctas_per_sm);
          if (tbps > best->first) best.emplace(tbps, variant);
        }
      }
      ctx.finding(name(), fmt::format("HBM {}: best {:.2f} TB/s ({:.1f}% of the {:.2f} TB/s ceiling) with {}",
                                      to_string(op), best->first, 100 * best->first / ceiling, ceiling,
                                      best->second));
    }
    const double driver = run_driver_copy(ctx, hbm);
    ctx.finding(name(), fmt::format("HBM copy by cudaMemcpyAsync (the driver's device-to-device copy, which PyTorch's "
                                    "copy_ calls): {:.2f} TB/s ({:.1f}% of the ceiling)",
                                    driver, 100 * driver / ceiling));
  }

  static const char* to_string(bw::Stream op) {
    return op == bw::Stream::read ? "read" : op == bw::Stream::write ? "write" : "copy";
  }

  // One row of thread-issued streaming; returns its median TB/s.
  double run_stream(ProbeContext& ctx, bw::Stream op, bw::Variant v, Hbm& hbm) {
    const int blocks = bw::blocks_for(v, hbm.count, ctx.device.sms * bw::kBlocksPerSm);
    const Json params = {{"loads_in_flight", v.loads_in_flight},
                         {"hints", bw::name(v.hint)},
                         {"schedule", bw::name(v.schedule)}};
    const std::string label = fmt::format("{} x{} {}", bw::name(v.schedule), v.loads_in_flight, bw::name(v.hint));
    return run_hbm_row(ctx, op, label, params, hbm, [&](cudaStream_t s) {
      bw::launch_stream(op, v, hbm.src.get(), hbm.dst.get(), hbm.count, hbm.seed, hbm.sink.get(), blocks, 0, s);
    });
  }

  static Json bulk_params(const bw::BulkVariant& v) {
    return {{"schedule", "tma-bulk"}, {"tile_kib", v.tile_kib}, {"stages", v.stages}, {"ctas_per_sm", v.ctas_per_sm}};
  }

  // One row of a copy through the TMA (sm_90a); returns its median TB/s.
  double run_bulk_copy(ProbeContext& ctx, bw::BulkVariant v, Hbm& hbm) {
    const Json params = bulk_params(v);
    const std::string label = fmt::format("tma-bulk {} KiB x{}", v.tile_kib, v.stages);
    return run_hbm_row(ctx, bw::Stream::copy, label, params, hbm, [&](cudaStream_t s) {
      bw::launch_bulk_copy(v, hbm.src.get(), hbm.dst.get(), hbm.count, ctx.device.sms, s);
    });
  }

  // The reference a user already has: the driver's own device-to-device copy.
  double run_driver_copy(ProbeContext& ctx, Hbm& hbm) {
    return run_hbm_row(ctx, bw::Stream::copy, "cudaMemcpyAsync", {{"schedule", "cudaMemcpyAsync"}}, hbm,
                       [&](cudaStream_t s) {
                         TK_CUDA(cudaMemcpyAsync(hbm.dst.get(), hbm.src.get(), hbm.bytes, cudaMemcpyDeviceToDevice, s));
                       },
                       Role::peer);
  }

  // Times `launch` over the whole buffer, checks what it read or wrote, adds the row.
  // The driver's copy is a peer's figure: reported, never judged by compare.
  enum class Role { ours, peer };

  template <class Launch>
  double run_hbm_row(ProbeContext& ctx, bw::Stream op, const std::string& label, const Json& params, Hbm& hbm,
                     const Launch& launch, Role role = Role::ours) {
    const double moved = double(hbm.bytes) * (op == bw::Stream::copy ? 2 : 1);
    hbm.dst.poison();
    const Measurement m =
        ctx.harness.time_kernel_rate(fmt::format("bandwidth hbm {} {}", to_string(op), label), launch, moved / 1e12);
    Result r = row("hbm", to_string(op), m, hbm_ceiling_tbps(ctx.device));
    r.params["bytes"] = hbm.bytes;
    r.params.update(params);
    r.peer = role == Role::peer;
    if (op == bw::Stream::read) {
      hbm.sink.poison(0);
      launch(ctx.harness.stream());
      const std::uint32_t got = hbm.sink.download()[0];
      r.checked({{"what", "XOR of every word read vs the host's"}, {"value", got}, {"expected", hbm.read_xor}},
                got == hbm.read_xor);
    } else {
      hbm.mismatches.poison(0);
      bw::count_mismatches(hbm.dst.get(), hbm.count, hbm.seed, hbm.mismatches.get(), ctx.harness.stream());
      const auto bad = hbm.mismatches.download()[0];
      r.checked({{"what", "words written that differ from the pattern"}, {"value", bad}}, bad == 0);
    }
    ctx.add(std::move(r));
    return m.stats.median;
  }

  void run_l2(ProbeContext& ctx) {
    const std::size_t bytes = static_cast<std::size_t>(ctx.device.l2_bytes) / kL2FootprintDivisor;
    const L2Read read = measure_l2_read(ctx, bytes, "bandwidth l2 read");
    Result r = row("l2", "read", read.m, std::nullopt);
    r.params["bytes"] = bytes;
    r.value(metric::passes, read.passes);
    r.checked({{"what", "XOR of every word read vs the host's"}, {"value", read.xor_read}, {"expected", read.xor_expected}},
              read.right());
    ctx.add(std::move(r));
  }

  void run_smem(ProbeContext& ctx) {
    namespace sb = smem_banks;
    constexpr int kWidth = 16, kWarps = 32;
    const sb::Launch launch_shape{ctx.device.sms, kWarps, ctx.options.quick ? 4096 : 16384};
    DeviceBuffer<std::uint64_t> cycles(ctx.device.sms);
    DeviceBuffer<std::uint32_t> sink(1024);
    DeviceBuffer<ClockWindow> clock(1);
    const double bytes = double(ctx.device.sms) * kWarps * launch_shape.trips * sb::kUnroll * 32 * kWidth;
    const Measurement m = ctx.harness.time_kernel_rate(
        "bandwidth smem 16-byte loads",
        [&](cudaStream_t s) { sb::launch_strided(kWidth, 1, launch_shape, {cycles.get(), sink.get(), clock.get()}, s); },
        bytes / 1e12, clock.get());
    const double ceiling = double(kSmemBytesPerClock) * ctx.device.sms * m.sm_clock_mhz * 1e6 / 1e12;
    Result r = row("smem", "read", m, ceiling);
    r.params["access"] = "ld.shared.v4, conflict-free, 32 warps per SM";
    r.value(metric::bytes_per_clock_per_sm, m.stats.median * 1e12 / (ctx.device.sms * m.sm_clock_mhz * 1e6));
    ctx.add(std::move(r));
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(Bandwidth);

}  // namespace tkprobe
