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

// Warp instructions `launch` issues per KiB of its `bytes`, or nothing where the counters cannot be
// read; then `why` holds the reason (the first one, where it already held one: a probe says it once).
std::optional<double> warp_instructions_per_kib(const std::function<void()>& launch, double bytes, std::string& why);

// Part of the reason wherever the driver lets only admins read the counters
// (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES): a GPU test skips on it rather than fails.
inline constexpr const char* kProfilingRestricted =
    "profiling is restricted to admin users (NVreg_RestrictProfilingToAdminUsers)";

}  // namespace tkprobe
