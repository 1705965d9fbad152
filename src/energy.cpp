#include "src/energy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "src/errors.hpp"

namespace tkprobe {
namespace {

constexpr double kChunkSeconds = 0.01;   // GPU time of one queued chunk of calls
constexpr int kChunksAhead = 4;          // chunks kept queued ahead of the GPU
constexpr double kPollSeconds = 0.0005;  // how often the host reads the counter
constexpr double kSlackSeconds = 1.0;    // past the window: a counter that has not stepped by then does not here

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

class Event {
 public:
  Event() { TK_CUDA(cudaEventCreate(&event_)); }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }
  bool done() const {
    const cudaError_t state = cudaEventQuery(event_);
    if (state == cudaErrorNotReady) return false;
    TK_CUDA(state);
    return true;
  }

 private:
  cudaEvent_t event_{};
};

}  // namespace

std::optional<EnergyPerCall> energy_from_steps(std::span<const EnergyStep> steps, double seconds_per_call) {
  if (steps.size() < std::size_t(kMinEnergySteps)) return std::nullopt;
  const double joules = steps.back().joules - steps.front().joules;
  const double seconds = steps.back().host_s - steps.front().host_s;
  if (!(joules > 0) || !(seconds > 0) || !(seconds_per_call > 0)) return std::nullopt;
  const double watts = joules / seconds;
  return EnergyPerCall{watts, watts * seconds_per_call, seconds_per_call, seconds, int(steps.size())};
}

std::optional<EnergyPerCall> measure_energy(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                                            double seconds_per_call, double window_s, const EnergyCounter& counter,
                                            std::string& why) {
  std::optional<double> last = counter();
  if (!last) {
    why = "NVML has no energy counter for this GPU";
    return std::nullopt;
  }
  const int calls_per_chunk = std::max(1, int(std::lround(kChunkSeconds / seconds_per_call)));
  std::deque<std::unique_ptr<Event>> queued;  // each queued chunk's end
  long chunks = 0;
  const auto enqueue_chunk = [&] {
    for (int i = 0; i < calls_per_chunk; ++i) launch(stream);
    TK_CUDA(cudaGetLastError());
    queued.push_back(std::make_unique<Event>());
    TK_CUDA(cudaEventRecord(queued.back()->get(), stream));
    ++chunks;
  };
  Event start, stop;
  TK_CUDA(cudaEventRecord(start.get(), stream));
  std::vector<EnergyStep> steps;
  bool busy = false, ran_dry = false;  // busy: the first chunk ended, so later ones are running
  const double begin = now_s();
  for (;;) {
    while (!queued.empty() && queued.front()->done()) {
      queued.pop_front();
      busy = true;
    }
    ran_dry |= busy && queued.empty();
    if (steps.size() >= 2 && steps.back().host_s - steps.front().host_s >= window_s) break;
    while (int(queued.size()) < kChunksAhead) enqueue_chunk();
    const std::optional<double> joules = counter();
    if (joules && *joules != *last) {
      last = joules;
      if (busy) steps.push_back({now_s(), *joules});
    }
    if (now_s() - begin > 2 * window_s + kSlackSeconds) break;  // a counter that stopped stepping
    std::this_thread::sleep_for(std::chrono::duration<double>(kPollSeconds));
  }
  TK_CUDA(cudaEventRecord(stop.get(), stream));
  TK_CUDA(cudaEventSynchronize(stop.get()));
  float ms = 0;
  TK_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  if (ran_dry) {
    why = "the GPU ran dry between queued chunks of calls";
    return std::nullopt;
  }
  const std::optional<EnergyPerCall> e = energy_from_steps(steps, ms / 1e3 / double(chunks * calls_per_chunk));
  if (!e) {
    why = fmt::format("NVML's energy counter stepped {} times in {:.1f} s of calls; {} are needed", steps.size(),
                      now_s() - begin, kMinEnergySteps);
  }
  return e;
}

}  // namespace tkprobe
