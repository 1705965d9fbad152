#include "probes/measure/tensor_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernels/tk/layout/fragments.hpp"
#include "kernels/tk/layout/swizzle.hpp"
#include "probes/timed_kernels/mma_sync_kernels.hpp"
#include "probes/timed_kernels/wgmma_kernels.hpp"
#include "src/device_buffer.hpp"

namespace tkprobe::tensor {
namespace {

namespace layout = tk::layout;

// One product (K = 128 bytes of inputs) against the host's: f32 sums of these inputs' products
// are good to ~1e-7, but Hopper's fp8 wgmma accumulates in fewer bits; f16 holds ~1e-3; s32 is
// exact. A wrong fragment layout or descriptor gives errors near 1.
double first_tolerance(DType d, Acc a) {
  if (a == Acc::s32) return 0;
  if (a == Acc::f16) return 1e-2;
  return d == DType::e4m3 || d == DType::e5m2 ? 1e-3 : 1e-4;
}

// Drift allowed per +P or -P pass where it is bounded: two f32 ulps (measured on the H200: up
// to 2.7e-8 per pass for fp16 and tf32, 0 for bf16, whose sums here are exact), none for s32.
std::optional<double> drift_per_pass(DType d, Acc a) {
  if (a == Acc::s32) return 0.0;
  if (a == Acc::f32 && d != DType::e4m3 && d != DType::e5m2) return std::ldexp(1.0, -22);
  return std::nullopt;
}

// Each sample's kernel runs about this long at the ideal rate (longer when slower).
double target_seconds(const ProbeContext& ctx) { return ctx.options.quick ? 0.5e-3 : 2e-3; }

// A 32-bit register packing 4/bytes consecutive elements, the first in the low bits.
template <class ElementAt>
std::uint32_t pack(DType d, ElementAt element_at) {
  const int bytes = info(d).bytes;
  std::uint32_t reg = 0;
  for (int j = 0; j < 4 / bytes; ++j) {
    const std::uint32_t bits = bytes == 4 ? element_at(j).bits : element_at(j).bits & ((1u << (8 * bytes)) - 1);
    reg |= bits << (8 * bytes * j);
  }
  return reg;
}

// Accumulator registers read back: thread t's register r sits at out[t * regs + r].
std::vector<double> unpack_accumulators(Acc acc, const std::vector<std::uint32_t>& out, int threads, int regs,
                                        int rows, int cols) {
  std::vector<double> d(static_cast<std::size_t>(rows) * cols, std::nan(""));
  const int per_reg = 4 / acc_bytes(acc);
  for (int t = 0; t < threads; ++t) {
    for (int r = 0; r < regs; ++r) {
      for (int j = 0; j < per_reg; ++j) {
        const layout::Coord c = layout::accumulator(t, r * per_reg + j);
        d[static_cast<std::size_t>(c.row) * cols + c.col] =
            accumulator_value(acc, out[static_cast<std::size_t>(t) * regs + r] >> (16 * j));
      }
    }
  }
  return d;
}

std::optional<double> datasheet(const DeviceInfo& device, DType d) {
  const auto peaks = datasheet_peaks(device.name);
  if (!peaks) return std::nullopt;
  switch (d) {
    case DType::bf16:
      return peaks->bf16;
    case DType::fp16:
      return peaks->fp16;
    case DType::tf32:
      return peaks->tf32;
    case DType::s8:
      return peaks->int8;
    default:
      return peaks->fp8;
  }
}

struct LaunchArgs {
  long long pairs;
  std::size_t smem;
  BlockSpan* spans;
};

// What both instructions share once the kernel, its residency and its launch are known:
// check one product, time, check again, and relate the rate to the peaks.
struct Bench {
  const void* kernel;
  int block_threads;
  int blocks_per_sm;
  std::size_t needed_smem;
  double flop_per_instruction;
  std::function<double(long long pairs)> instructions_per_sm;  // for a launch of `pairs`
  std::function<void(const LaunchArgs&, cudaStream_t)> launch;
  std::function<double()> check;  // relative error of the output just produced
};

TensorRun measure(ProbeContext& ctx, const std::string& label, DType d, Acc acc, const Bench& b,
                  DeviceBuffer<std::uint32_t>& out, const DeviceBuffer<ClockWindow>& clock) {
  TensorRun run;
  run.flop_per_instruction = b.flop_per_instruction;
  run.tolerance = first_tolerance(d, acc);
  run.residency = plan_residency(b.kernel, b.block_threads, b.blocks_per_sm, b.needed_smem, ctx.device);
  if (run.residency.blocks_per_sm != b.blocks_per_sm) {
    run.skipped = fmt::format("{} blocks of {} threads fit per SM, not {} ({} registers/thread, {} B shared each)",
                              run.residency.blocks_per_sm, b.block_threads, b.blocks_per_sm,
                              run.residency.registers_per_thread, run.residency.dynamic_smem);
    return run;
  }
  run.flop_per_clock_per_sm = flop_per_clock_per_sm(ctx.device, info(d).name);
  if (run.flop_per_clock_per_sm == 0) {
    run.skipped = fmt::format("no tensor-core FLOP/clk/SM known for {} on sm_{}, so no clock peak to judge it by",
                              info(d).name, ctx.device.cc());
    return run;
  }
  const int blocks = b.blocks_per_sm * ctx.device.sms;
  DeviceBuffer<BlockSpan> spans(blocks);
  const auto launch_checked = [&](long long pairs) {
    out.poison();
    b.launch({pairs, run.residency.dynamic_smem, spans.get()}, ctx.harness.stream());
    TK_CUDA(cudaStreamSynchronize(ctx.harness.stream()));
    return b.check();
  };
  run.first_error = launch_checked(0);  // one pass: the product, nothing repeated

  const double ideal_pair = b.instructions_per_sm(1) - b.instructions_per_sm(0);
  const double cycles = target_seconds(ctx) * ctx.device.sm_clock_max_mhz * 1e6;
  const long long pairs = std::max<long long>(
      kPairUnroll,
      std::llround(cycles / (ideal_pair * run.ideal_cycles_per_instruction()) / kPairUnroll) * kPairUnroll);
  run.instructions_per_sm = b.instructions_per_sm(pairs);
  const double tera_ops = run.instructions_per_sm * blocks / b.blocks_per_sm * b.flop_per_instruction / 1e12;
  out.poison();
  run.rate = ctx.harness.time_kernel_rate(
      label, [&](cudaStream_t s) { b.launch({pairs, run.residency.dynamic_smem, spans.get()}, s); }, tera_ops,
      clock.get());
  run.drift = b.check();
  run.passes = 2.0 * pairs + 1;
  if (const auto per_pass = drift_per_pass(d, acc)) run.drift_bound = run.tolerance + run.passes * *per_pass;
  run.concurrent_blocks_per_sm = concurrent_blocks_per_sm(spans.download());
  run.clock_peak = clock_peak_tflops(ctx.device.sms, run.flop_per_clock_per_sm, run.rate.sm_clock_mhz);
  const auto pct = pct_of_clock_peak(run.rate, ctx.device.sms, run.flop_per_clock_per_sm);
  if (!pct) throw CudaError(label + ": a sample carried no in-kernel clock");
  run.pct_clock_peak_stats = *pct;
  run.datasheet_peak = datasheet(ctx.device, d);
  return run;
}

// The shared-memory image: A, -A and B, each row's 128 bytes of K under the 128B swizzle.
std::vector<std::uint8_t> wgmma_image(DType d, const Matrix& a, const Matrix& a_neg, const Matrix& b) {
  std::vector<std::uint8_t> image(wgmma_image_bytes(b.rows));
  const int bytes = info(d).bytes;
  const auto place = [&](const Matrix& m, int offset) {
    for (int r = 0; r < m.rows; ++r) {
      for (int k = 0; k < m.cols; ++k) {
        const std::uint32_t at = offset + layout::swizzle(r * kSwizzleRowBytes + k * bytes, layout::Swizzle::b128);
        for (int i = 0; i < bytes; ++i) image[at + i] = static_cast<std::uint8_t>(m(r, k).bits >> (8 * i));
      }
    }
  };
  place(a, kAPlusOffset);
  place(a_neg, kAMinusOffset);
  place(b, kBOffset);
  return image;
}

// A in registers: [sign][slice][thread][register], warp w holding rows 16w..16w+15.
std::vector<std::uint32_t> wgmma_a_fragments(DType d, const Matrix& a, const Matrix& a_neg) {
  std::vector<std::uint32_t> frags;
  const int k = k_of(d);
  for (const Matrix* m : {&a, &a_neg}) {
    for (int s = 0; s < kKSlices; ++s) {
      for (int t = 0; t < kWarpgroupThreads; ++t) {
        for (int r = 0; r < kAFragmentRegs; ++r) {
          frags.push_back(pack(d, [&](int j) {
            const layout::Coord c = layout::a_fragment(t % 32, r, j, info(d).bytes);
            return (*m)(16 * (t / 32) + c.row, s * k + c.col);
          }));
        }
      }
    }
  }
  return frags;
}

// A run that could not start on this GPU or build, saying why.
TensorRun skipped_run(std::string why) {
  TensorRun run;
  run.skipped = std::move(why);
  return run;
}

}  // namespace

double TensorRun::ideal_cycles_per_instruction() const { return flop_per_instruction / flop_per_clock_per_sm; }

double TensorRun::cycles_per_instruction() const { return ideal_cycles_per_instruction() * clock_peak / tflops(); }

TensorRun run_wgmma(ProbeContext& ctx, const WgmmaConfig& c) {
  if (std::string why = why_not_runnable(kWgmmaNeeds, ctx.device); !why.empty()) return skipped_run(std::move(why));
  const int k_tile = kSwizzleRowBytes / info(c.dtype).bytes;
  const Matrix a = random_matrix(c.dtype, kM, k_tile, ctx.rng), a_neg = negated(c.dtype, a);
  const Matrix b = random_matrix(c.dtype, c.n, k_tile, ctx.rng);
  const std::vector<double> want = reference_product(a, b);

  const auto image = wgmma_image(c.dtype, a, a_neg, b);
  DeviceBuffer<std::uint8_t> image_dev(image.size());
  image_dev.upload(image);
  DeviceBuffer<std::uint32_t> a_frags(2 * kKSlices * kWarpgroupThreads * kAFragmentRegs);
  if (c.a == ASource::reg) a_frags.upload(wgmma_a_fragments(c.dtype, a, a_neg));
  const int regs = kM * c.n * acc_bytes(c.acc) / 4 / kWarpgroupThreads;
  DeviceBuffer<std::uint32_t> out(static_cast<std::size_t>(kWarpgroupThreads) * regs);
  DeviceBuffer<ClockWindow> clock(1);

  const void* kernel = c.kernel ? c.kernel : wgmma_kernel({c.dtype, c.acc, c.n, c.a});
  const Bench bench{
      kernel,
      kWarpgroupThreads,
      c.warpgroups,
      static_cast<std::size_t>(wgmma_smem_bytes(c.n)),
      wgmma_flop(c.dtype, c.n),
      [&](long long pairs) { return double(c.warpgroups) * kKSlices * (2 * pairs + 1); },
      [&](const LaunchArgs& l, cudaStream_t s) {
        WgmmaParams p{image_dev.get(), a_frags.get(), l.pairs, out.get(), clock.get(), l.spans};
        launch_kernel(kernel, c.warpgroups * ctx.device.sms, kWarpgroupThreads, l.smem, &p, s);
      },
      [&] {
        return relative_error(unpack_accumulators(c.acc, out.download(), kWarpgroupThreads, regs, kM, c.n), want);
      }};
  return measure(ctx, describe(c), c.dtype, c.acc, bench, out, clock);
}

TensorRun run_mma_sync(ProbeContext& ctx, const MmaSyncConfig& c) {
  if (std::string why = why_not_runnable(mma_sync_needs(c.dtype), ctx.device); !why.empty()) {
    return skipped_run(std::move(why));
  }
  const int k = k_of(c.dtype), bytes = info(c.dtype).bytes;
  const Acc acc = default_acc(c.dtype);
  const Matrix a = random_matrix(c.dtype, kMmaSyncM, k, ctx.rng), a_neg = negated(c.dtype, a);
  std::vector<Matrix> bs;
  std::vector<double> want;
  std::vector<std::uint32_t> a_frags, b_frags;
  for (const Matrix* m : {&a, &a_neg}) {
    for (int lane = 0; lane < 32; ++lane) {
      for (int r = 0; r < kMmaARegs; ++r) {
        a_frags.push_back(pack(c.dtype, [&](int j) {
          const layout::Coord at = layout::a_fragment(lane, r, j, bytes);
          return (*m)(at.row, at.col);
        }));
      }
    }
  }
  for (int i = 0; i < c.ilp; ++i) {
    const Matrix b = random_matrix(c.dtype, kMmaSyncN, k, ctx.rng);
    const auto product = reference_product(a, b);
    want.insert(want.end(), product.begin(), product.end());
    for (int lane = 0; lane < 32; ++lane) {
      for (int r = 0; r < kMmaBRegs; ++r) {
        b_frags.push_back(pack(c.dtype, [&](int j) {
          const layout::Coord at = layout::b_fragment(lane, r, j, bytes);
          return b(at.col, at.row);  // B is stored N x K
        }));
      }
    }
  }
  DeviceBuffer<std::uint32_t> a_dev(a_frags.size()), b_dev(b_frags.size());
  a_dev.upload(a_frags);
  b_dev.upload(b_frags);
  DeviceBuffer<std::uint32_t> out(static_cast<std::size_t>(c.ilp) * 32 * kMmaAccRegs);
  DeviceBuffer<ClockWindow> clock(1);

  const int block_warps = std::min(c.warps_per_sm, kMmaSyncBlockWarps);
  const void* kernel = mma_sync_kernel({c.dtype, c.ilp});
  const Bench bench{
      kernel,
      32 * block_warps,
      c.warps_per_sm / block_warps,
      0,
      mma_sync_flop(c.dtype),
      [&](long long pairs) { return double(c.warps_per_sm) * c.ilp * (2 * pairs + 1); },
      [&](const LaunchArgs& l, cudaStream_t s) {
        MmaSyncParams p{a_dev.get(), b_dev.get(), l.pairs, out.get(), clock.get(), l.spans};
        launch_kernel(kernel, c.warps_per_sm / block_warps * ctx.device.sms, 32 * block_warps, l.smem, &p, s);
      },
      [&] {
        // Accumulator i of lane t, register r is out[(i * 32 + t) * 4 + r]: product i's 16x8 tile.
        const auto got = out.download();
        std::vector<double> all;
        for (int i = 0; i < c.ilp; ++i) {
          const std::vector<std::uint32_t> one(got.begin() + i * 32 * kMmaAccRegs,
                                               got.begin() + (i + 1) * 32 * kMmaAccRegs);
          const auto d = unpack_accumulators(acc, one, 32, kMmaAccRegs, kMmaSyncM, kMmaSyncN);
          all.insert(all.end(), d.begin(), d.end());
        }
        return relative_error(all, want);
      }};
  return measure(ctx, describe(c), c.dtype, acc, bench, out, clock);
}

Json params_json(const WgmmaConfig& c) {
  return {{"instruction", "wgmma"}, {"dtype", info(c.dtype).name}, {"acc", name(c.acc)},
          {"shape", fmt::format("64x{}x{}", c.n, k_of(c.dtype))}, {"a", name(c.a)}, {"warpgroups", c.warpgroups}};
}

Json params_json(const MmaSyncConfig& c) {
  return {{"instruction", "mma.sync"}, {"dtype", info(c.dtype).name}, {"acc", name(default_acc(c.dtype))},
          {"shape", fmt::format("16x8x{}", k_of(c.dtype))}, {"ilp", c.ilp}, {"warps_per_sm", c.warps_per_sm}};
}

std::string describe(const WgmmaConfig& c) {
  return fmt::format("wgmma {} {} 64x{} A={} warpgroups={}", info(c.dtype).name, name(c.acc), c.n, name(c.a),
                     c.warpgroups);
}

std::string describe(const MmaSyncConfig& c) {
  return fmt::format("mma.sync {} ilp={} warps={}", info(c.dtype).name, c.ilp, c.warps_per_sm);
}

std::string headline(const std::string& config, DType d, const TensorRun& run) {
  const std::string datasheet =
      run.datasheet_peak ? fmt::format("{:.1f}%", 100 * run.tflops() / *run.datasheet_peak) : "(no datasheet row)";
  return fmt::format(
      "{} = {:.1f} {}, {} of the datasheet peak, {:.1f}% of the clock peak at {:.0f} MHz ({:.2f} "
      "cycles per instruction per SM, ideal {:.2f}; accumulators drifted {:.1e} over {:.0f} passes)",
      config, run.tflops(), d == DType::s8 ? "TOP/s" : "TFLOP/s", datasheet, run.pct_clock_peak(),
      run.rate.sm_clock_mhz, run.cycles_per_instruction(), run.ideal_cycles_per_instruction(), run.drift, run.passes);
}

Result tensor_result(const std::string& probe, Json params, DType d, const TensorRun& run) {
  Result r(probe, std::move(params));
  if (!run.skipped.empty()) {
    r.status = Status::skipped;
    r.reason = run.skipped;
    return r;
  }
  // Judged by % of the clock peak: the TFLOP/s of one kernel swing by several % with the power
  // state between runs, its efficiency per clock does not.
  r.metric("pct_clock_peak", run.pct_clock_peak_stats, "%", Better::higher);
  r.metric("tflops", run.rate.stats, d == DType::s8 ? "TOP/s" : "TFLOP/s", Better::higher);
  r.value("pct_datasheet_peak",
          run.datasheet_peak ? Json(100 * run.tflops() / *run.datasheet_peak) : Json(nullptr));
  r.value("sm_clock_mhz", run.rate.sm_clock_mhz);
  r.value("cycles_per_instruction", run.cycles_per_instruction());
  r.value("ideal_cycles_per_instruction", run.ideal_cycles_per_instruction());
  r.value("registers_per_thread", run.residency.registers_per_thread);
  r.value("warps_per_sm", run.residency.warps_per_sm);
  r.value("occupancy_pct", 100 * run.residency.occupancy);
  r.value("concurrent_blocks_per_sm", run.concurrent_blocks_per_sm);
  r.telemetry = run.rate.telemetry;
  r.value("drift_after_timing", run.drift);
  r.value("passes", run.passes);
  r.checked({{"what", "relative error of one product vs the host's; after timing, drift within its bound"},
             {"value", run.first_error},
             {"max", run.tolerance},
             {"drift", run.drift},
             {"drift_max", run.drift_bound ? Json(*run.drift_bound) : Json(nullptr)}},
            run.correct());
  return r;
}

}  // namespace tkprobe::tensor
