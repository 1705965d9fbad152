#pragma once
// Energy per call from NVML's total-energy counter. The counter steps about every 100 ms, so a window
// of a few calls reads anywhere between nothing and a whole step: the call runs back to back for a
// window of seconds instead, and only the energy between two steps the host saw while the GPU was busy
// counts, over the time between those steps. That is the GPU's mean power under the call; times the
// call's mean time over the same window, its energy.
#include <cuda_runtime.h>

#include <functional>
#include <optional>
#include <span>
#include <string>

namespace tkprobe {

struct EnergyStep {  // the counter's value as it changed, and when the host saw the change
  double host_s;
  double joules;
};

struct EnergyPerCall {
  double watts;             // mean power between the first and the last step seen
  double joules_per_call;   // watts x seconds_per_call
  double seconds_per_call;  // the call's mean time over the window, by CUDA events
  double window_s;          // between the first and the last step
  int steps;
};

// Fewer steps than this average the counter's granularity too coarsely to report.
constexpr int kMinEnergySteps = 5;

// From the steps seen while the GPU was busy; nullopt with fewer than kMinEnergySteps, or where the
// counter went backwards or the clock stood still.
std::optional<EnergyPerCall> energy_from_steps(std::span<const EnergyStep> steps, double seconds_per_call);

// The counter in joules, or nullopt where this GPU or driver has none.
using EnergyCounter = std::function<std::optional<double>()>;

// Runs `launch` back to back on `stream` until steps at least `window_s` apart were seen, keeping a
// few chunks of calls queued so the GPU never waits on the host. On failure returns nullopt and says
// why in `why` (no counter; it did not step; the GPU ran dry between chunks).
std::optional<EnergyPerCall> measure_energy(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                                            double seconds_per_call, double window_s, const EnergyCounter& counter,
                                            std::string& why);

}  // namespace tkprobe
