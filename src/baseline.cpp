#include "src/baseline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "src/compare.hpp"
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

// The per-second twin judges a row only where it drifted less than half as much as the per-clock
// primary: compute-bound rows, the most, see the two drift alike while the clock holds over the runs,
// and would otherwise be judged per second by chance, and fail when the power state next moves.
constexpr double kTwinSteadier = 2;

// `metric`'s median in every run, or empty where a run has none (skipped, no such statistic).
std::vector<double> medians(const std::vector<std::map<std::string, const Json*>>& rows, const std::string& key,
                            const std::string& metric) {
  std::vector<double> out;
  for (const auto& run : rows) {
    const Json& r = *run.at(key);
    const Json* stats = metric_stats(r, metric);
    if (r["status"] != "ok" || !stats) return {};
    out.push_back(stats->at("median").get<double>());
  }
  return out;
}

// The spread of `m` over the runs, in percent of its smallest value, so that every run lies within it
// of every other, the kept one included (negative: no spread to take).
double drift_of(std::vector<double> m) {
  if (m.empty()) return -1;
  std::sort(m.begin(), m.end());
  return m.front() <= 0 ? -1 : 100.0 * (m.back() - m.front()) / m.front();
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

  // Per row: the metric it is judged by (the primary, or its per-second twin where that drifted far
  // less over the runs: compare.hpp says why), each reading's drift, and which run holds the primary's
  // median. Both readings keep their drift: compare judges a row that neither held still by the one
  // that loses less, each within its own band.
  struct Judged {
    std::string metric;
    std::map<std::string, double> drift;  // per reading: the primary, and its twin where it has one
  };
  std::map<std::string, Judged> judged_by;
  std::vector<int> at_median(runs.size(), 0);
  for (const auto& [key, row] : rows[0]) {
    const std::string primary = row->value("primary", "");
    const std::vector<double> m = medians(rows, key, primary);
    const double drift = drift_of(m);
    if (drift < 0) continue;
    Judged& j = judged_by[key];
    j = {primary, {{primary, drift}}};
    const std::string twin = per_second_twin(primary);
    if (const double twin_drift = drift_of(medians(rows, key, twin)); twin_drift >= 0) {
      j.drift[twin] = twin_drift;
      if (kTwinSteadier * twin_drift < drift && drift > kMinBandPct) j.metric = twin;
    }
    std::vector<double> sorted = m;
    std::sort(sorted.begin(), sorted.end());
    ++at_median[std::find(m.begin(), m.end(), sorted[(sorted.size() - 1) / 2]) - m.begin()];
  }
  const std::size_t kept = std::max_element(at_median.begin(), at_median.end()) - at_median.begin();

  Json baseline = runs[kept].report;
  for (auto& r : baseline["results"]) {
    const auto it = judged_by.find(row_key(r));
    if (it == judged_by.end()) continue;
    r["primary"] = it->second.metric;
    for (const auto& [metric, drift] : it->second.drift) {
      Json& stats = r["metrics"][metric];
      stats["drift_pct"] = drift;
      stats["runs"] = runs.size();
    }
  }
  Json sources = Json::array();
  for (const auto& run : runs) sources.push_back(run.report["tool"]["started_at"]);
  baseline["tool"]["baseline"] = {{"runs", sources}, {"kept", kept}};
  return compact_report(std::move(baseline));
}

std::vector<const Json*> unsteady_rows(const Json& baseline, double threshold_pct) {
  std::vector<const Json*> out;
  for (const auto& r : baseline["results"]) {
    if (r.value("peer", false)) continue;  // a peer's rows are shown, never judged
    const auto unsteady = [&](const std::string& metric) {
      const Json* stats = metric_stats(r, metric);
      return stats && stats->contains("drift_pct") &&
             (*stats)["drift_pct"].get<double>() > max_drift_band_pct(threshold_pct);
    };
    // A row with a per-second twin is judged by the reading that loses less once its primary drifted
    // past the band (compare.cpp), and a power state moves its two readings apart, never both down.
    const std::string primary = r.value("primary", ""), twin = per_second_twin(primary);
    if (unsteady(primary) && (twin.empty() || !metric_stats(r, twin))) out.push_back(&r);
  }
  return out;
}

}  // namespace tkprobe
