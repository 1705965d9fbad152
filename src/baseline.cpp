#include "src/baseline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "src/errors.hpp"
#include "src/report.hpp"

namespace tkprobe {
namespace {

// Each run's rows by key; every run must hold exactly the first run's rows.
std::vector<std::map<std::string, const Json*>> rows_by_key(const std::vector<ReportSet>& runs) {
  std::vector<std::map<std::string, const Json*>> out(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (const auto& r : runs[i].report["results"]) out[i][row_key(r)] = &r;
  }
  for (std::size_t i = 1; i < runs.size(); ++i) {
    for (const auto& [key, row] : out[0]) {
      if (!out[i].count(key)) {
        throw UsageError(fmt::format("{}: lacks {} {}, which {} has: a baseline needs runs of the same suite",
                                     runs[i].source, (*row)["probe"].get<std::string>(),
                                     params_text((*row)["params"]), runs[0].source));
      }
    }
    if (out[i].size() != out[0].size()) {
      throw UsageError(fmt::format("{}: holds {} rows, {} holds {}: a baseline needs runs of the same suite",
                                   runs[i].source, out[i].size(), runs[0].source, out[0].size()));
    }
  }
  return out;
}

// The primary metric's median in every run, or empty where a run has none (skipped, no primary).
std::vector<double> medians(const std::vector<std::map<std::string, const Json*>>& rows, const std::string& key) {
  std::vector<double> out;
  for (const auto& run : rows) {
    const Json& r = *run.at(key);
    const std::string primary = r.value("primary", "");
    if (r["status"] != "ok" || primary.empty() || !r["metrics"][primary].is_object()) return {};
    out.push_back(r["metrics"][primary]["median"].get<double>());
  }
  return out;
}

}  // namespace

Json make_baseline(const std::vector<ReportSet>& runs) {
  if (runs.size() < kMinBaselineRuns) {
    throw UsageError(fmt::format("baseline: give at least {} runs of the suite (got {})", kMinBaselineRuns, runs.size()));
  }
  for (const auto& run : runs) {
    if (gpu_model(run.report) != gpu_model(runs[0].report)) {
      throw UsageError(fmt::format("{}: from a {}, but {} is from a {}: a baseline is of one GPU model", run.source,
                                   gpu_model(run.report), runs[0].source, gpu_model(runs[0].report)));
    }
  }
  const auto rows = rows_by_key(runs);

  // Per row: the drift over the runs, and which run holds the median.
  std::map<std::string, double> drift_pct;
  std::vector<int> at_median(runs.size(), 0);
  for (const auto& [key, _] : rows[0]) {
    std::vector<double> m = medians(rows, key);
    if (m.empty()) continue;
    std::vector<double> sorted = m;
    std::sort(sorted.begin(), sorted.end());
    const double middle = sorted[(sorted.size() - 1) / 2];
    if (middle == 0) continue;
    drift_pct[key] = 100.0 * (sorted.back() - sorted.front()) / middle;
    ++at_median[std::find(m.begin(), m.end(), middle) - m.begin()];
  }
  const std::size_t kept = std::max_element(at_median.begin(), at_median.end()) - at_median.begin();

  Json baseline = runs[kept].report;
  for (auto& r : baseline["results"]) {
    const auto it = drift_pct.find(row_key(r));
    if (it == drift_pct.end()) continue;
    Json& stats = r["metrics"][r["primary"].get<std::string>()];
    stats["drift_pct"] = it->second;
    stats["runs"] = runs.size();
  }
  Json sources = Json::array();
  for (const auto& run : runs) sources.push_back(run.report["tool"]["started_at"]);
  baseline["tool"]["baseline"] = {{"runs", sources}, {"kept", kept}};
  return compact_report(std::move(baseline));
}

}  // namespace tkprobe
