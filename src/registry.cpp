#include <algorithm>

#include "src/probe.hpp"

namespace tkprobe {

static std::vector<ProbeFactory>& factories() {
  static std::vector<ProbeFactory> all;
  return all;
}

RegisterProbe::RegisterProbe(ProbeFactory factory) { factories().push_back(std::move(factory)); }

std::vector<std::unique_ptr<Probe>> make_probes() {
  std::vector<std::unique_ptr<Probe>> probes;
  for (const auto& make : factories()) probes.push_back(make());
  std::sort(probes.begin(), probes.end(), [](const auto& a, const auto& b) { return a->name() < b->name(); });
  return probes;
}

TimingConfig timing_config(const CommonOptions& o) {
  TimingConfig c;
  c.min_time_s = o.min_time_s;
  c.max_noise = o.max_noise_pct / 100.0;
  c.timeout_s = o.timeout_s;
  c.flush_l2 = o.flush_l2;
  if (o.quick) {
    c.min_samples = 5;
    c.warmup = 1;
    c.timeout_s = std::min(c.timeout_s, 0.5);
  }
  return c;
}

}  // namespace tkprobe
