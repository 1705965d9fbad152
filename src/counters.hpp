#pragma once
// Hardware counters over one launch, read through CUPTI's range profiler (cupti_range_profiler.h,
// cupti_profiler_host.h): what ncu reports, measured inside tkprobe so a probe can put it in its
// report. The main use: SASS instructions a kernel issues ("smsp__inst_executed.sum", counted per
// warp), which tells what a copy or compute loop costs the SM beyond its time.
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tkprobe {

// One metric's value over the profiled range, or why there is none (no CUPTI, profiling not
// permitted for this user, metric unknown on this chip). Never an invented number.
struct CounterValue {
  bool available = false;
  double value = 0;
  std::string reason;  // set when !available
};

// Profiles `launch` (which enqueues the kernels to measure, on any stream, and must be safe to
// repeat: the profiler may replay it once per pass) on the current device and evaluates each of
// `metrics` over everything it launched. Returns one CounterValue per metric, in order. Throws
// only what `launch` throws, or CudaError where the work it enqueued fails.
std::vector<CounterValue> measure_counters(const std::vector<std::string>& metrics,
                                           const std::function<void()>& launch);

// The metric for SASS instructions issued, counted once per warp instruction.
inline constexpr const char* kWarpInstructionsIssued = "smsp__inst_executed.sum";

// SASS warp instructions per KiB, counted row by row over a probe's run (copy-engines, tma-reduce):
// each count, or nothing where the counters cannot be read, and then, once, why.
class InstructionCounts {
 public:
  // Warp instructions `launch` issues per KiB of its `bytes`; nothing where the counters cannot be read.
  std::optional<double> per_kib(const std::function<void()>& launch, double bytes);
  // "12.3", or "n/a" for a count that could not be read.
  static std::string text(const std::optional<double>& per_kib);
  // The finding a probe adds where some count could not be read (the first reason), or nothing.
  std::optional<std::string> unavailable_finding() const;

 private:
  std::string why_;
};

// Part of the reason wherever the driver lets only admins read the counters
// (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES): a GPU test skips on it rather than fails.
inline constexpr const char* kProfilingRestricted =
    "profiling is restricted to admin users (NVreg_RestrictProfilingToAdminUsers)";

}  // namespace tkprobe
