#pragma once
// Measuring one tensor-core configuration, shared by the wgmma, mma-sync, tensor-cores and
// occupancy probes: draw fresh operands, check one product against the host, then time the
// kernel and check its output again, and put the figures against the peaks.
#include <optional>
#include <string>

#include "probes/measure/tensor_types.hpp"
#include "src/probe.hpp"
#include "src/residency.hpp"

namespace tkprobe::tensor {

struct WgmmaConfig {
  DType dtype = DType::bf16;
  Acc acc = Acc::f32;
  int n = 256;
  ASource a = ASource::smem;
  int warpgroups = 2;  // per SM, each its own block
  // Another build of the same kernel for this variant (the overlap probe's, with filler work after
  // each wgmma); null: wgmma_kernel's.
  const void* kernel = nullptr;
};

struct MmaSyncConfig {
  DType dtype = DType::bf16;
  int ilp = 4;
  int warps_per_sm = 16;
};

// Warps per block for mma-sync's warps per SM: up to 4 in one block, beyond that blocks of 4.
inline constexpr int kMmaSyncBlockWarps = 4;
constexpr bool valid_mma_sync_warps(int w) { return w >= 1 && w <= 64 && (w <= kMmaSyncBlockWarps || w % 4 == 0); }

struct TensorRun {
  std::string skipped;  // why it could not run; empty when it ran
  Measurement rate;     // TFLOP/s (TOP/s for s8), sampled per launch
  Residency residency;
  double flop_per_instruction = 0;
  double instructions_per_sm = 0;  // per launch
  int concurrent_blocks_per_sm = 0;  // measured: the most blocks that overlapped, least over SMs
  // Correctness. The untimed single product must match the host's within `tolerance`. The timed
  // launches leave the accumulators after `passes` of +P/-P, where the tensor cores' rounding
  // drifts them (linearly in passes: the rounding is biased); where a bound on that drift is
  // known (f32 from 16/32-bit inputs, s32) the drift is checked too, elsewhere only reported.
  double first_error = 0, tolerance = 0;
  double drift = 0;
  double passes = 0;
  std::optional<double> drift_bound;
  bool correct() const { return first_error <= tolerance && (!drift_bound || drift <= *drift_bound); }
  int flop_per_clock_per_sm = 0;  // this GPU's dense tensor rate for the type (src/device.hpp)
  double clock_peak = 0;          // TFLOP/s at the (median) clock measured inside the kernel
  std::optional<double> datasheet_peak;

  Stats pct_clock_peak_stats;  // per sample: its rate against the peak at its own clock

  double tflops() const { return rate.stats.median; }
  double pct_clock_peak() const { return pct_clock_peak_stats.median; }
  double ideal_cycles_per_instruction() const;
  double cycles_per_instruction() const;  // SM cycles between instructions, all warps together
};

TensorRun run_wgmma(ProbeContext& ctx, const WgmmaConfig& c);
TensorRun run_mma_sync(ProbeContext& ctx, const MmaSyncConfig& c);

Json params_json(const WgmmaConfig& c);
Json params_json(const MmaSyncConfig& c);
std::string describe(const WgmmaConfig& c);
std::string describe(const MmaSyncConfig& c);

// "<config> = 812.3 TFLOP/s, 82.1% of the datasheet peak, 97.9% of the clock peak at 1650 MHz
// (130.7 cycles per instruction per SM, ideal 128; accumulators drifted ...)": what a finding quotes.
std::string headline(const std::string& config, DType d, const TensorRun& run);

// A report row: TFLOP/s (primary), % of the datasheet and clock peaks, cycles per instruction,
// residency, and the correctness check; or a skipped row saying why.
Result tensor_result(const std::string& probe, Json params, DType d, const TensorRun& run);

}  // namespace tkprobe::tensor
