#include <algorithm>

#include "src/probe.hpp"

namespace tkprobe {

static std::vector<ProbeFactory>& factories() {
  static std::vector<ProbeFactory> all;
  return all;
}

std::string needs_text(const Probe& p) {
  std::string text = describe(p.needs());
  for (const RowNeeds& r : p.row_needs()) text += "; " + r.rows + ": " + describe(r.needs);
  return text;
}

RegisterProbe::RegisterProbe(ProbeFactory factory) { factories().push_back(std::move(factory)); }

std::vector<std::unique_ptr<Probe>> make_probes() {
  std::vector<std::unique_ptr<Probe>> probes;
  for (const auto& make : factories()) probes.push_back(make());
  std::sort(probes.begin(), probes.end(), [](const auto& a, const auto& b) { return a->name() < b->name(); });
  return probes;
}

}  // namespace tkprobe
