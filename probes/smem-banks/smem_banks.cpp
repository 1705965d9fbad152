// smem-banks: what shared-memory bank conflicts cost, measured as the hardware serves them.
//
// Each SM runs one block of many warps issuing shared loads back to back, so the
// shared-memory pipe (128 bytes a cycle), not one warp's issue and latency, is the limit: a
// single warp cannot keep the pipe busy, which inflates its conflict-free time and makes a
// conflict look cheaper than it is (the single-warp rows show by how much). The figure is SM cycles per warp-wide
// access, set beside what the 32-bank model (probes/smem-banks/bank_model.hpp) predicts.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <numeric>

#include "probes/smem-banks/bank_model.hpp"
#include "probes/smem-banks/metrics.hpp"
#include "probes/timed_kernels/smem_banks_kernels.hpp"
#include "src/device_buffer.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::smem_banks;  // this probe's metrics.json

namespace tkprobe {
namespace {

using tk::layout::Swizzle;
namespace sb = smem_banks;

constexpr int kMaxStride = 64;              // lane 31 of a 16-byte access then ends at 31.7 KiB
constexpr int kPipeBoundWarps = 32;         // enough warps in flight that the pipe is the limit
constexpr double kMinSlowdown32Way = 16;    // physically ~32x; under 16x the probe measures nothing
constexpr double kMinSlowdownLdmatrix = 4;  // the model says 8-way
constexpr double kModelTolerance = 0.25;    // measured ways within 25% of the model's "agree"
constexpr int kLdmatrixLaneBytes = 16;      // each lane of ldmatrix.x4 supplies one 16-byte row address

class SmemBanks final : public Probe {
 public:
  std::string name() const override { return "smem-banks"; }
  std::string summary() const override {
    return "Shared-memory bank conflicts: cycles per warp access by stride and width; ldmatrix unswizzled vs 128B "
           "swizzle";
  }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--width", widths_, "Access widths in bytes (4, 8, 16; default all)")
        ->check(CLI::IsMember({4, 8, 16}));
    cmd.add_option("--stride", strides_, "Strides in elements of the access width, 1..64 (default all)");
    cmd.add_option("--warps", warps_, "Warps per SM, 1..32 (default 32: pipe-bound)")
        ->check(CLI::Range(1, kPipeBoundWarps));
  }

  void validate() const override {
    for (int s : strides_) {
      if (s < 1 || s > kMaxStride) {
        throw UsageError(
            fmt::format("--stride {}: give strides from 1 to {} (in elements of the access width)", s, kMaxStride));
      }
    }
  }

  void run(ProbeContext& ctx) override {
    Kit kit(ctx, warps_);
    std::map<int, double> conflict_free;  // cycles per conflict-free access, by width
    for (int width : widths_) conflict_free[width] = run_width(ctx, kit, width);
    const auto pipe = [&](int width) {
      if (!conflict_free.contains(width)) conflict_free[width] = measure_strided(ctx, kit, width, 1).stats.median;
      return conflict_free[width];
    };
    run_ldmatrix(ctx, kit, pipe(kLdmatrixLaneBytes));
    if (warps_ == kPipeBoundWarps) run_single_warp(ctx, pipe(4));
  }

 private:
  std::vector<int> widths_{4, 8, 16};
  std::vector<int> strides_;
  int warps_ = kPipeBoundWarps;

  // Device buffers and the launch shape shared by every configuration.
  struct Kit {
    // Every block makes the same number of accesses whatever its warps, so samples take alike long.
    Kit(const ProbeContext& ctx, int warps)
        : launch{ctx.device.sms, warps, (ctx.options.quick ? 64 : 256) * kPipeBoundWarps / warps},
          cycles(ctx.device.sms),
          sink(1024),
          clock(1) {}
    sb::Launch launch;
    DeviceBuffer<std::uint64_t> cycles;
    DeviceBuffer<std::uint32_t> sink;
    DeviceBuffer<ClockWindow> clock;
    sb::Outputs outputs() const { return {cycles.get(), sink.get(), clock.get()}; }
    double accesses_per_block() const { return double(launch.warps_per_block) * launch.trips * sb::kUnroll; }
  };

  std::vector<int> strides(bool quick) const {
    if (!strides_.empty()) return strides_;
    if (quick) return {1, 2, 3, 4, 8, 16, 17, 32, 64};
    std::vector<int> all(kMaxStride);
    std::iota(all.begin(), all.end(), 1);
    return all;
  }

  // SM cycles per warp-wide access: the median block's time over the accesses it made.
  static Measurement measure(ProbeContext& ctx, Kit& kit, const std::string& label,
                             const std::function<void(cudaStream_t)>& launch) {
    return ctx.harness.measure(label, [&] {
      launch(ctx.harness.stream());
      TK_CUDA(cudaStreamSynchronize(ctx.harness.stream()));
      auto per_block = kit.cycles.download();
      std::nth_element(per_block.begin(), per_block.begin() + per_block.size() / 2, per_block.end());
      const ClockWindow w = kit.clock.download()[0];
      return Sample{per_block[per_block.size() / 2] / kit.accesses_per_block(), window_mhz(w),
                    (w.end.ns - w.begin.ns) * 1e-9};
    });
  }

  static Result row(Json params, const Measurement& m, double baseline_cycles, double model_ways) {
    Result r("smem-banks", std::move(params));
    r.metric(metric::cycles_per_access, m.stats, "cycles", Better::lower);
    r.value(metric::model_ways, model_ways);
    r.value(metric::measured_ways, m.stats.median / baseline_cycles);
    r.value(metric::ns_per_access, m.stats.median / m.sm_clock_mhz * 1e3);
    r.telemetry = m.telemetry;
    return r;
  }

  static Measurement measure_strided(ProbeContext& ctx, Kit& kit, int width, int stride) {
    return measure(ctx, kit,
                   fmt::format("smem-banks width={} stride={} warps={}", width, stride, kit.launch.warps_per_block),
                   [&](cudaStream_t s) { sb::launch_strided(width, stride, kit.launch, kit.outputs(), s); });
  }

  // A strided row: the model's ways and the bytes a clock the warps' loads delivered.
  static Result strided_row(int width, int stride, int warps, const Measurement& m, double baseline) {
    Result r = row({{"access", "ld.shared"}, {"width_bytes", width}, {"stride", stride}, {"warps", warps}}, m, baseline,
                   banks::strided_ways(width, stride));
    r.value(metric::bytes_per_clock, banks::kWarpSize * width / m.stats.median);
    return r;
  }

  // Returns the conflict-free cycles per access, the baseline every stride is judged against.
  double run_width(ProbeContext& ctx, Kit& kit, int width) {
    const Measurement conflict_free = measure_strided(ctx, kit, width, 1);
    const double baseline = conflict_free.stats.median;
    int agree = 0, total = 0;
    for (int stride : strides(ctx.options.quick)) {
      const Measurement m = stride == 1 ? conflict_free : measure_strided(ctx, kit, width, stride);
      const double model = banks::strided_ways(width, stride);
      Result r = strided_row(width, stride, warps_, m, baseline);
      const double measured = m.stats.median / baseline;
      agree += std::abs(measured / model - 1) <= kModelTolerance;
      ++total;
      if (width == 4 && model == banks::kBanks && warps_ == kPipeBoundWarps) {
        r.checked({{"what", "32-way conflict slowdown"}, {"value", measured}, {"min", kMinSlowdown32Way}},
                  measured >= kMinSlowdown32Way);
      }
      ctx.add(std::move(r));
    }
    ctx.finding(name(), fmt::format("{}-byte loads: conflict-free {:.2f} cycles per warp access ({:.0f} B/clk/SM); "
                                    "the bank model's ways match the measured slowdown within {:.0f}% for {} of {} "
                                    "strides",
                                    width, baseline, banks::kWarpSize * width / baseline, 100 * kModelTolerance, agree,
                                    total));
    return baseline;
  }

  // Both layouts against the conflict-free 16-byte ld.shared: ldmatrix.x4 moves the same 512 bytes
  // a warp (32 lanes x 16 bytes), so conflict-free it takes as long, and `measured_ways` of each
  // layout is its own slowdown, set beside the model's. The bounds hold when the pipe is the limit.
  void run_ldmatrix(ProbeContext& ctx, Kit& kit, double conflict_free_16) {
    const auto launch_mode = [&](Swizzle mode) {
      return [&, mode](cudaStream_t s) { sb::launch_ldmatrix(mode, kit.launch, kit.outputs(), s); };
    };
    const auto model_ways = [](Swizzle mode) {
      std::uint32_t addresses[banks::kWarpSize];
      for (int lane = 0; lane < banks::kWarpSize; ++lane) addresses[lane] = sb::ldmatrix_lane_offset(lane, mode);
      return double(banks::wavefronts(addresses, kLdmatrixLaneBytes)) / banks::ideal_wavefronts(kLdmatrixLaneBytes);
    };
    const Measurement swizzled = measure(ctx, kit, "smem-banks ldmatrix 128B swizzle", launch_mode(Swizzle::b128));
    const Measurement plain = measure(ctx, kit, "smem-banks ldmatrix unswizzled", launch_mode(Swizzle::none));
    Result r_plain = row({{"access", "ldmatrix.x4"}, {"layout", "8x128B rows, unswizzled"}, {"warps", warps_}}, plain,
                         conflict_free_16, model_ways(Swizzle::none));
    Result r_swizzled = row({{"access", "ldmatrix.x4"}, {"layout", "8x128B rows, 128B swizzle"}, {"warps", warps_}},
                            swizzled, conflict_free_16, model_ways(Swizzle::b128));
    const double plain_ways = plain.stats.median / conflict_free_16;
    const double swizzled_ways = swizzled.stats.median / conflict_free_16;
    if (warps_ == kPipeBoundWarps) {
      r_plain.checked({{"what", "unswizzled ldmatrix / conflict-free 16-byte load"},
                       {"value", plain_ways},
                       {"min", kMinSlowdownLdmatrix}},
                      plain_ways >= kMinSlowdownLdmatrix);
      r_swizzled.checked({{"what", "swizzled ldmatrix / conflict-free 16-byte load, against the model's ways"},
                          {"value", swizzled_ways},
                          {"model", model_ways(Swizzle::b128)},
                          {"tolerance", kModelTolerance}},
                         std::abs(swizzled_ways / model_ways(Swizzle::b128) - 1) <= kModelTolerance);
    }
    ctx.add(std::move(r_plain));
    ctx.add(std::move(r_swizzled));
    ctx.finding(name(), fmt::format("ldmatrix.x4 over eight 128-byte rows: {:.2f} cycles unswizzled vs {:.2f} with the "
                                    "128B XOR swizzle ({:.1f}x and {:.1f}x a conflict-free 16-byte load; the model "
                                    "says {:.0f}-way and {:.0f}-way)",
                                    plain.stats.median, swizzled.stats.median, plain_ways, swizzled_ways,
                                    model_ways(Swizzle::none), model_ways(Swizzle::b128)));
  }

  // Why the probe fills the SM: one warp cannot keep the pipe busy, so its conflict-free time
  // is inflated and the ratio understates what a conflict costs.
  void run_single_warp(ProbeContext& ctx, double pipe) {
    Kit one(ctx, 1);
    const Measurement free = measure_strided(ctx, one, 4, 1);
    const Measurement conflicted = measure_strided(ctx, one, 4, banks::kBanks);
    ctx.add(strided_row(4, 1, 1, free, free.stats.median));
    ctx.add(strided_row(4, banks::kBanks, 1, conflicted, free.stats.median));
    ctx.finding(name(),
                fmt::format("one warp alone: {:.2f} cycles per conflict-free access where the pipe needs {:.2f}, "
                            "and {:.2f} for a 32-way conflict, so the conflict shows as {:.1f}x instead of {}x",
                            free.stats.median, pipe, conflicted.stats.median,
                            conflicted.stats.median / free.stats.median, banks::kBanks));
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(SmemBanks);

}  // namespace tkprobe
