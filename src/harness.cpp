#include "src/harness.hpp"

#include <fmt/format.h>

#include <chrono>
#include <string>
#include <vector>

#include "src/errors.hpp"
#include "src/nvml.hpp"

namespace tkprobe {

bool sampling_done(const TimingConfig& c, std::size_t n, double cv, double measured_s, double wall_s, bool* converged) {
  const auto samples = static_cast<int>(n);
  *converged = samples >= c.min_samples && measured_s >= c.min_time_s && cv <= c.max_noise;
  const bool out_of_budget = (wall_s >= c.timeout_s && samples >= 2) || samples >= c.max_samples;
  return *converged || out_of_budget;
}

bool ClockSettle::add(double sm_clock_mhz, double seconds) {
  spent_s_ += seconds;
  window_s_ += seconds;
  window_.push_back(sm_clock_mhz);
  if (window_s_ >= kWindowSeconds) {
    const double mhz = summarize(window_).median;
    settled_ = previous_mhz_ > 0 && std::abs(mhz - previous_mhz_) <= kSpread * previous_mhz_;
    previous_mhz_ = mhz;
    window_.clear();
    window_s_ = 0;
  }
  return settled_ || spent_s_ >= kBudgetSeconds;
}

void Harness::warn_unconverged(std::string_view label, const Stats& s, double counted_s) const {
  std::string why;
  if (s.cv > config_.max_noise)
    why = fmt::format("noise {:.2f}% above --max-noise {:.2f}%", 100 * s.cv, 100 * config_.max_noise);
  if (counted_s < config_.min_time_s) {
    why += fmt::format("{}{:.3f} s measured, under --min-time {:.3f} s", why.empty() ? "" : "; ", counted_s,
                       config_.min_time_s);
  }
  if (static_cast<int>(s.n) < config_.min_samples) {
    why += fmt::format("{}{} samples, under the {} wanted", why.empty() ? "" : "; ", s.n, config_.min_samples);
  }
  fmt::print(stderr, "warning: {}: stopped by the time budget after {} samples: {}\n", label, s.n, why);
}

Harness::Harness(TimingConfig config, const DeviceInfo& device, Progress& progress)
    : config_(config), device_(device), progress_(progress) {
  // A blocking stream: ordered with the legacy default stream that DeviceBuffer copies use.
  TK_CUDA(cudaStreamCreate(&stream_));
  TK_CUDA(cudaEventCreate(&start_));
  TK_CUDA(cudaEventCreate(&stop_));
}

Harness::~Harness() {
  if (l2_scrub_) cudaFree(l2_scrub_);
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
  cudaStreamDestroy(stream_);
}

void Harness::flush_l2() {
  // Writing twice the L2's size of other data evicts whatever the previous sample left there.
  const auto bytes = static_cast<std::size_t>(2 * device_.l2_bytes);
  if (!l2_scrub_) TK_CUDA(cudaMalloc(&l2_scrub_, bytes));
  TK_CUDA(cudaMemsetAsync(l2_scrub_, static_cast<int>(++scrub_value_ & 0xff), bytes, stream_));
}

Measurement Harness::measure(std::string_view label, const std::function<Sample()>& take) {
  using clock = std::chrono::steady_clock;
  // --flush-l2 evicts L2 before every sample of every probe, including those that time themselves.
  const auto take_sample = [&] {
    flush_l2_if_asked();
    return take();
  };
  Sample last{};
  for (int i = 0; i < config_.warmup; ++i) last = take_sample();
  ClockSettle settle;
  const bool settling = !std::isnan(last.sm_clock_mhz) && last.seconds > 0 &&
                        ClockSettle::needed(last.sm_clock_mhz, device_.sm_clock_max_mhz);
  while (settling && !settle.add(last.sm_clock_mhz, last.seconds)) last = take_sample();

  const auto& nvml = Nvml::instance();
  const NvmlSample before = nvml.sample(device_.pci_bus_id);
  std::vector<double> values, clocks;
  RunningStats running;
  double measured_s = 0, counted_s = 0;
  const auto start = clock::now();
  Measurement m;
  for (;;) {
    const Sample s = take_sample();
    values.push_back(s.value);
    running.add(s.value);
    if (!std::isnan(s.sm_clock_mhz)) clocks.push_back(s.sm_clock_mhz);
    measured_s += s.seconds;
    const double wall_s = std::chrono::duration<double>(clock::now() - start).count();
    progress_.update(fmt::format("{}: {} samples, cv {:.2f}%", label, running.n(), 100 * running.cv()));
    // Samples that do not say how much device time they took count by the wall clock.
    counted_s = measured_s > 0 ? measured_s : wall_s;
    if (sampling_done(config_, running.n(), running.cv(), counted_s, wall_s, &m.converged)) break;
  }
  const NvmlSample after = nvml.sample(device_.pci_bus_id);
  m.stats = summarize(values);

  if (!clocks.empty()) m.sm_clock_mhz = summarize(clocks).median;
  if (clocks.size() == values.size()) {
    std::vector<double> per_mhz(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) per_mhz[i] = values[i] / clocks[i];
    m.per_mhz = summarize(per_mhz);
  }
  m.telemetry = telemetry_json(before, after, m.sm_clock_mhz);
  m.telemetry["samples_converged"] = m.converged;
  if (settling) m.telemetry["clock_settled"] = settle.settled();
  progress_.clear();
  if (!m.converged) warn_unconverged(label, m.stats, counted_s);
  if (m.telemetry.value("throttled", false)) {
    fmt::print(stderr, "warning: {}: the GPU reported clock throttling ({})\n", label, m.telemetry["reasons"].dump());
  }
  return m;
}

Stats timed_samples(std::span<const double> all, const Measurement& m) { return summarize(all.last(m.stats.n)); }

Measurement Harness::time_kernel_ms(std::string_view label, const std::function<void(cudaStream_t)>& launch,
                                    const ClockWindow* device_clock) {
  return time_kernel(label, launch, device_clock, nullptr, [](double ms) { return ms; });
}

Measurement Harness::time_kernel_rate(std::string_view label, const std::function<void(cudaStream_t)>& launch,
                                      double work, const ClockWindow* device_clock) {
  return time_kernel(label, launch, device_clock, nullptr, [work](double ms) { return work / (ms * 1e-3); });
}

Measurement Harness::time_kernel_rate(std::string_view label, const std::function<void(cudaStream_t)>& launch,
                                      double work, const ClockBracket& bracket) {
  return time_kernel(label, launch, bracket.window, &bracket, [work](double ms) { return work / (ms * 1e-3); });
}

double Harness::launch_ms(const std::function<void(cudaStream_t)>& launch, const ClockBracket* bracket) {
  if (bracket) bracket->begin(stream_);
  TK_CUDA(cudaEventRecord(start_, stream_));
  launch(stream_);
  TK_CUDA(cudaGetLastError());
  TK_CUDA(cudaEventRecord(stop_, stream_));
  if (bracket) bracket->end(stream_);
  TK_CUDA(cudaEventSynchronize(stop_));
  float ms = 0;
  TK_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

Measurement Harness::time_kernel(std::string_view label, const std::function<void(cudaStream_t)>& launch,
                                 const ClockWindow* device_clock, const ClockBracket* bracket,
                                 const std::function<double(double)>& value_of_ms) {
  return measure(label, [&]() {
    const double ms = launch_ms(launch, bracket);
    Sample s{value_of_ms(ms), std::nan(""), ms / 1e3};
    if (device_clock) {
      ClockWindow w{};
      TK_CUDA(cudaMemcpy(&w, device_clock, sizeof w, cudaMemcpyDeviceToHost));
      s.sm_clock_mhz = window_mhz(w);
    }
    return s;
  });
}

std::optional<EnergyPerCall> Harness::energy_per_call(const std::function<void(cudaStream_t)>& launch,
                                                      double seconds_per_call, double window_s, std::string& why) {
  const auto counter = [this] { return Nvml::instance().total_energy_j(device_.pci_bus_id); };
  return measure_energy(launch, stream_, seconds_per_call, window_s, counter, why);
}

std::optional<Stats> pct_of_clock_peak(const Measurement& m, int sms, int flop_per_clock_per_sm) {
  if (!m.per_mhz) return std::nullopt;
  return scaled(*m.per_mhz, 100 / clock_peak_tflops(sms, flop_per_clock_per_sm, 1));
}

}  // namespace tkprobe
