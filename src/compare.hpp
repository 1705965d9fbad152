#pragma once
// `tkprobe compare BASE NEW`: matches rows by probe + params and judges each by its primary metric,
// the one chosen to hold still on unchanged code (per clock, cycles, bytes per second, a paired
// ratio). The noise band comes from the baseline alone: the drift its runs showed, or its own spread.
#include <set>
#include <string>
#include <vector>

#include "src/json.hpp"
#include "src/report_set.hpp"

namespace tkprobe {

struct CompareOptions {
  double threshold_pct = 5.0;          // a slowdown beyond this fails the comparison
  bool allow_device_mismatch = false;  // compare reports from different GPU models
  std::set<std::string> probes;        // compare only these probes; empty: every probe
};

enum class Verdict {
  faster,
  slower,
  same,
  missing,         // the row vanished from a probe that ran: fails
  no_figure,       // the new row has no primary metric to judge: fails
  added,           // a row the baseline lacks
  failed,          // the new row failed its check: fails
  skipped,         // skipped in either report; fails if it ran in the baseline
  not_comparable,  // the baseline row has no primary metric (a decode, a table)
  not_run,         // its probe did not run this time: not a regression
  peer,            // a peer's figure (cuBLASLt, the driver): context, never judged
};
std::string_view to_string(Verdict);

struct CompareRow {
  std::string probe;
  int device = -1;     // the device of a report of several devices it ran on; -1: one device's report, or p2p
  std::string params;  // "key=value key=value", for reading
  Json params_json;    // the same, as the report has them
  std::string metric;
  std::string unit;
  double base = 0, now = 0;
  double delta_pct = 0;  // (now - base) / base, signed as measured
  double loss_pct = 0;   // how much worse, whichever way the metric runs (negative: better)
  double band_pct = 0;   // the band inside which a difference is called `same`
  Verdict verdict = Verdict::same;
  bool fails = false;  // this row alone makes compare exit 1
  // Why the row has no judged change of figures, in a few words (a report's own reason where it
  // gives one): "not judged by its probe: ...", "skipped in new: ...". Empty on same, faster, slower.
  std::string why;
  // Faster per clock yet slower per second by more than the threshold and its band: the SM clock fell
  // further than the row gained. A kernel change that draws the card into its power cap does this
  // (docs/decisions/002-changes-measured-in-turns.md), as can a card's drift between runs of
  // unchanged code. A note, never a failure: scripts/ab.py, in turns, tells the two apart. 0: none.
  double per_second_loss_pct = 0;

  bool has_figures() const;  // base and now are both set
  bool judged() const;       // a row the gate decides on (one test case in JUnit)
};

struct Comparison {
  std::vector<CompareRow> rows;
  double threshold_pct = 0;
  std::string base_source, new_source;
  // Set when base and new name different cards (device.uuid): a baseline's bands hold the drift
  // between runs on one card, and unchanged code has measured further apart between cards
  // (docs/decisions/003-baseline-bands.md). A caution, not a verdict.
  std::string caution;
  bool failed() const;
  int failing() const;
};

// `row`'s statistics (median, spread, unit, ...) of `metric`, or null where it has none or a plain value.
const Json* metric_stats(const Json& row, const std::string& metric);

// The per-second metric beside a per-clock one ("pct_clock_peak" -> "tflops", "wgmma_pct_clock_peak"
// -> "wgmma_tflops"); empty for any other. A kernel bound by its SM clock holds still per clock; one
// bound by memory, whose clock does not move with the power state, holds still per second (attention's
// N=1024 causal forward on the H200: 12% apart per clock over three runs, 4% per second). A baseline
// made by `tkprobe baseline` judges each such row by whichever of the two drifted less over its runs;
// against a raw run, which cannot tell, and where the baseline's per-clock reading drifted past the
// widest band (bound by neither clock alone), a row is judged by the reading that loses less, since
// a slower kernel loses on both at the same clock.
std::string per_second_twin(const std::string& metric);

// The noise band of a baseline's primary metric, in percent: the drift its runs showed
// (`drift_pct`, recorded by `tkprobe baseline`), at most kDriftBandCap times the threshold; else two
// standard deviations of the difference of two medians with the baseline's CV, at most the threshold
// (one run's spread cannot see the drift between runs); at least kMinBandPct either way. A row fails
// when it loses more than the threshold and more than its band: a row whose unchanged runs drifted 5.5%
// apart is held to 5.5%, none to more than 7% at the 5% default, so 8% more time always fails.
inline constexpr double kMinBandPct = 0.5;
inline constexpr double kDriftBandCap = 1.4;
double noise_band_pct(const Json& base_stats, double threshold_pct);
// The largest band a recorded drift may give at `threshold_pct`.
constexpr double max_drift_band_pct(double threshold_pct) { return kDriftBandCap * threshold_pct; }

// Throws UsageError when the reports come from different GPU models and that is not allowed.
// Reports of several devices (--devices) are compared device by device (src/report_devices.hpp): a
// base of one device is the baseline of every device of new; a base of several pairs each of its
// devices with new's device of the same index (one that new lacks has its rows missing, failing: a
// GPU that fell off the bus; one that base lacks has its rows new), and the rows that span devices
// (p2p) with new's.
Comparison compare_reports(const ReportSet& base, const ReportSet& now, const CompareOptions& options);

}  // namespace tkprobe
