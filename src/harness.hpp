#pragma once
// The measurement harness every probe and kernel uses: warm-up, repeat until the noise is
// under a target or the time budget ends, summarise, and record the device's state around it.
#include <cuda_runtime_api.h>

#include <cmath>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "src/device.hpp"
#include "src/energy.hpp"
#include "src/json.hpp"
#include "src/kernel_clock.cuh"
#include "src/progress.hpp"
#include "src/stats.hpp"

namespace tkprobe {

struct TimingConfig {
  double min_time_s = 0.02;  // --min-time: least measured time per measurement
  double max_noise = 0.01;   // --max-noise (as a fraction): stop once the CV is under it
  double timeout_s = 2.0;    // stop here even when still noisy (and say so)
  int warmup = 3;
  int min_samples = 10;
  int max_samples = 100000;
  bool flush_l2 = false;  // --flush-l2: evict L2 before each sample
};

// One sample: its value, the SM clock the kernel measured while producing it (NaN if none),
// and how many seconds of device time it represents (for --min-time).
struct Sample {
  double value = 0;
  double sm_clock_mhz = std::nan("");
  double seconds = 0;
};

// The SM clock of a kernel that cannot stamp a ClockWindow itself (its interface has no room for
// one, or it is a library's): `begin` runs on the stream just before each sample's start event and
// `end` just after its stop event, so neither is timed, and together they leave at `window` the
// clock64 / %globaltimer window around the launch (probes/measure/clock_bracket.hpp makes one).
struct ClockBracket {
  std::function<void(cudaStream_t)> begin, end;
  const ClockWindow* window = nullptr;
};

struct Measurement {
  Stats stats;
  double sm_clock_mhz = std::nan("");  // median of the in-kernel clock readings
  // Each sample's value over the clock it ran at, when every sample had one: a rate per MHz,
  // steady where the clock is not (tensor-core loads swing it by 10% with power).
  std::optional<Stats> per_mhz;
  bool converged = false;
  Json telemetry;  // NVML before/after, in-kernel clock, throttle flag, convergence
  std::optional<EnergyPerCall> energy;  // where the probe asked for it (Harness::energy_per_call)
};

// Warm-up's second half, for samples that carry the SM clock: a heavy kernel pulls the clock down
// over tens of milliseconds as power builds, so samples taken at once land on a different point of
// that descent in each process. Warm-up goes on until two successive windows of at least
// kWindowSeconds of kernel time ran at median clocks within kSpread of each other, or until
// kBudgetSeconds of kernel time have passed (then `settled` stays false and the row says so). A
// kernel still at kNearTop of the top clock after the first warm-up pulls no clock down: it skips this.
class ClockSettle {
 public:
  static constexpr double kWindowSeconds = 0.02;
  static constexpr double kSpread = 0.005;
  static constexpr double kBudgetSeconds = 1.0;
  static constexpr double kNearTop = 0.98;
  static bool needed(double sm_clock_mhz, double top_mhz) { return sm_clock_mhz < kNearTop * top_mhz; }
  // Takes one warm-up sample; true once warm-up may end (settled, or out of budget).
  bool add(double sm_clock_mhz, double seconds);
  bool settled() const { return settled_; }

 private:
  std::vector<double> window_;  // clocks of the window being filled
  double window_s_ = 0, spent_s_ = 0, previous_mhz_ = 0;
  bool settled_ = false;
};

// Whether sampling may stop: enough samples, enough measured time and quiet enough (converged);
// or out of budget: the wall-clock timeout passed, or the sample cap was reached.
bool sampling_done(const TimingConfig& c, std::size_t n, double cv, double measured_s, double wall_s, bool* converged);

class Harness {
 public:
  Harness(TimingConfig config, const DeviceInfo& device, Progress& progress);
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  cudaStream_t stream() const { return stream_; }

  // Repeats `take` (after warm-up) until sampling_done; for probes that time themselves
  // inside the kernel (clock64 cycles), or any other per-run figure. Under --flush-l2, L2 is
  // evicted before every take.
  Measurement measure(std::string_view label, const std::function<Sample()>& take);

  // Milliseconds per launch of `launch` on stream(), by CUDA events. If the kernel stamps
  // `device_clock` (a device pointer), each sample carries the SM clock it ran at.
  Measurement time_kernel_ms(std::string_view label, const std::function<void(cudaStream_t)>& launch,
                             const ClockWindow* device_clock = nullptr);

  // The same, sampled as a rate: `work` (FLOPs, bytes) per second of each launch, so the
  // statistics (median, quartiles, noise) are those of the rate itself.
  Measurement time_kernel_rate(std::string_view label, const std::function<void(cudaStream_t)>& launch, double work,
                               const ClockWindow* device_clock = nullptr);
  // The same for a kernel whose clock a bracket measures from outside.
  Measurement time_kernel_rate(std::string_view label, const std::function<void(cudaStream_t)>& launch, double work,
                               const ClockBracket& bracket);
  // Energy per call of `launch` run back to back for `window_s` seconds (src/energy.hpp); nullopt,
  // with the reason in `why`, where NVML cannot give it.
  std::optional<EnergyPerCall> energy_per_call(const std::function<void(cudaStream_t)>& launch, double seconds_per_call,
                                               double window_s, std::string& why);

  // Milliseconds of one launch on stream() by CUDA events: for samples that time several kernels
  // each, e.g. a ratio from back-to-back launches (measure() flushes L2 under --flush-l2 before
  // the sample; a sample's later launches call flush_l2_if_asked() to start cold too).
  // With `bracket`, its clock stamps go just outside the events.
  double launch_ms(const std::function<void(cudaStream_t)>& launch, const ClockBracket* bracket = nullptr);

  // Evicts L2 (writes twice its size of other data on stream()): --flush-l2 does this before
  // every sample; probes that must start cold call it themselves.
  void flush_l2();
  void flush_l2_if_asked() {
    if (config_.flush_l2) flush_l2();
  }

 private:
  Measurement time_kernel(std::string_view label, const std::function<void(cudaStream_t)>& launch,
                          const ClockWindow* device_clock, const ClockBracket* bracket,
                          const std::function<double(double)>& value_of_ms);
  void warn_unconverged(std::string_view label, const Stats& s, double counted_s) const;
  TimingConfig config_;
  const DeviceInfo& device_;
  Progress& progress_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  void* l2_scrub_ = nullptr;
  unsigned scrub_value_ = 0;
};

// The statistics of the samples `m` kept of `all`, which recorded something per sample of `m`,
// warm-up included (warm-up samples come first): figures taken beside a paired measurement, each
// from the same samples as the pair's ratio.
Stats timed_samples(std::span<const double> all, const Measurement& m);

// Each sample's rate (TFLOP/s) as a percentage of the clock peak at the SM clock that sample ran
// at (SMs x FLOP/clk/SM x that clock: steady where the clock is not); empty when a sample carried
// no in-kernel clock.
std::optional<Stats> pct_of_clock_peak(const Measurement& m, int sms, int flop_per_clock_per_sm);

}  // namespace tkprobe
