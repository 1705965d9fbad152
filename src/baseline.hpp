#pragma once
// `tkprobe baseline --out FILE RUN...`: a baseline from several runs of the same suite. The power
// state moves a GPU's figures between runs, so one run is a coin toss on it; this keeps the run
// whose judged figures sit at the median most often, and records on the metric each row is judged by
// how far the runs spread (`drift_pct`, `runs`): the noise band `compare` then uses. That metric is
// the row's primary, or the per-second twin of a per-clock primary where the runs show it steadier
// (the row is bound by something other than its SM clock; compare.hpp's per_second_twin).
#include <vector>

#include "src/json.hpp"
#include "src/report_set.hpp"

namespace tkprobe {

inline constexpr int kMinBaselineRuns = 2;

// Throws UsageError when the runs are fewer than kMinBaselineRuns, come from different GPU models,
// or do not hold the same rows.
Json make_baseline(const std::vector<ReportSet>& runs);

// The judged rows (peers' are not) of a baseline whose runs drifted further apart on the metric they
// are judged by than compare's band may reach at `threshold_pct` (max_drift_band_pct), and that have
// no per-second twin for compare to fall back on: a run at the far end of such a row's drift fails
// against the baseline even with the code unchanged. `tkprobe baseline` names them.
std::vector<const Json*> unsteady_rows(const Json& baseline, double threshold_pct);

}  // namespace tkprobe
