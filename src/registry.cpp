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

}  // namespace tkprobe
