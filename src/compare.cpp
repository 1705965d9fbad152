#include "src/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "src/errors.hpp"
#include "src/report_devices.hpp"

namespace tkprobe {
namespace {

CompareRow base_row(const Json& r) {
  CompareRow row;
  row.probe = r["probe"].get<std::string>();
  row.params = params_text(r["params"]);
  row.params_json = r["params"];
  row.metric = r.value("primary", "");
  return row;
}

// Reports hold 6 significant digits: a difference from the band this small is the rounding's.
constexpr double kUnresolvedPct = 0.01;

// One metric of a row read in both reports: how far it moved and the band it is held to.
struct Reading {
  std::string metric, unit;
  double base = 0, now = 0, delta_pct = 0, loss_pct = 0, band_pct = 0;
};

Reading reading_of(const std::string& metric, const Json& b, const Json& n, double threshold_pct) {
  Reading r{metric, b.value("unit", ""), b.at("median").get<double>(), n.at("median").get<double>()};
  r.delta_pct = 100.0 * (r.now - r.base) / r.base;
  r.band_pct = noise_band_pct(b, threshold_pct);
  r.loss_pct = b.value("better", "higher") == "higher" ? -r.delta_pct : r.delta_pct;
  return r;
}

void judge(CompareRow& row, const Json& base, const Json& now, double threshold_pct) {
  const bool peer = base.value("peer", false);
  const auto base_status = base["status"].get<std::string>();
  const auto now_status = now["status"].get<std::string>();
  if (now_status == "failed") {
    row.verdict = Verdict::failed;
    row.fails = true;
    return;
  }
  if (base_status != "ok" || now_status != "ok") {
    row.verdict = Verdict::skipped;
    row.fails = base_status == "ok" && !peer;  // a result that stopped running has no number to defend it
    return;
  }
  const Json* b = metric_stats(base, row.metric);
  if (!b || b->at("median").get<double>() == 0) {
    row.verdict = peer ? Verdict::peer : Verdict::not_comparable;
    return;
  }
  const Json* n = metric_stats(now, row.metric);
  if (!n) {
    row.verdict = peer ? Verdict::peer : Verdict::no_figure;
    row.fails = !peer;
    return;
  }
  Reading best = reading_of(row.metric, *b, *n, threshold_pct);
  // A raw base (no recorded drift) cannot tell a clock-bound row from a memory-bound one, and a
  // baseline whose runs drifted past the widest band on the per-clock reading found it bound by
  // neither alone: the per-second reading beside a per-clock one judges it where it loses less
  // (compare.hpp).
  const std::string twin = per_second_twin(row.metric);
  const Json *bt = metric_stats(base, twin), *nt = metric_stats(now, twin);
  const bool held = b->contains("drift_pct") && b->at("drift_pct").get<double>() <= max_drift_band_pct(threshold_pct);
  const bool has_twin = bt && nt && bt->at("median").get<double>() != 0;
  const Reading per_second = has_twin ? reading_of(twin, *bt, *nt, threshold_pct) : Reading{};
  if (has_twin && !held && per_second.loss_pct < best.loss_pct) best = per_second;
  row.metric = best.metric;
  row.unit = best.unit;
  row.base = best.base;
  row.now = best.now;
  row.delta_pct = best.delta_pct;
  row.band_pct = best.band_pct;
  row.loss_pct = best.loss_pct;
  if (peer) {
    row.verdict = Verdict::peer;
  } else if (std::fabs(row.delta_pct) <= row.band_pct + kUnresolvedPct) {
    row.verdict = Verdict::same;
  } else {
    row.verdict = row.loss_pct > 0 ? Verdict::slower : Verdict::faster;
    row.fails = row.loss_pct > std::max(threshold_pct, row.band_pct);
  }
  if (has_twin && row.verdict == Verdict::faster && per_second.loss_pct > std::max(threshold_pct, per_second.band_pct))
    row.per_second_loss_pct = per_second.loss_pct;
}

// A report's free-text field as written; any other value as JSON.
std::string text_of(const Json& said) { return said.is_string() ? said.get<std::string>() : said.dump(); }

// A row's own word on why it did not run ok: its reason, else the check it failed.
std::string reason_of(const Json& row) {
  if (row.contains("reason")) return text_of(row["reason"]);
  if (row.contains("check") && row["check"].is_object() && row["check"].contains("what")) {
    return "its check (" + text_of(row["check"]["what"]) + ")";
  }
  return "";
}

// "skipped in new: <its reason>"
std::string status_note(const Json& row, const std::string& side) {
  const std::string reason = reason_of(row);
  return fmt::format("{} in {}{}", row["status"].get<std::string>(), side, reason.empty() ? "" : ": " + reason);
}

// Which report did not run the row ok, and why; said once where both say the same.
std::string why_skipped(const Json& base, const Json& now) {
  if (base["status"] == now["status"] && reason_of(base) == reason_of(now)) return status_note(base, "both");
  if (base["status"] == "ok") return status_note(now, "new");
  if (now["status"] == "ok") return status_note(base, "base");
  return status_note(base, "base") + "; " + status_note(now, "new");
}

// Why the baseline's row gives no figure to measure a change from.
std::string why_not_comparable(const Json& base, const std::string& metric) {
  if (base["metrics"].contains("not_judged"))
    return "not judged by its probe: " + text_of(base["metrics"]["not_judged"]);
  if (metric.empty()) return "plain values, no judged metric";
  if (!metric_stats(base, metric)) return fmt::format("'{}' is a plain value, not a measurement", metric);
  return fmt::format("the baseline's '{}' is 0: no change to measure from it", metric);
}

// CompareRow::why of a row both reports hold.
std::string why_unjudged(const CompareRow& row, const Json& base, const Json& now) {
  switch (row.verdict) {
    case Verdict::peer:
      return "a peer's figure: reported, never judged";
    case Verdict::not_comparable:
      return why_not_comparable(base, row.metric);
    case Verdict::skipped:
      return why_skipped(base, now);
    case Verdict::failed:
      return status_note(now, "new");
    case Verdict::no_figure:
      return fmt::format("new has no '{}' to judge", row.metric);
    default:
      return "";
  }
}

bool selected(const CompareOptions& o, const Json& r) {
  return o.probes.empty() || o.probes.count(r["probe"].get<std::string>());
}

// Why a comparison's verdicts deserve a second look, or "" (Comparison::caution).
std::string card_caution(const Json& base, const Json& now) {
  const std::string a = base.value("uuid", ""), b = now.value("uuid", "");
  if (a.empty() || b.empty() || a == b) return "";
  return fmt::format("base and new ran on different cards ({} and {}): the bands hold the drift between runs on one card, "
                     "not the differences between cards", a, b);
}

}  // namespace

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::faster:
      return "faster";
    case Verdict::slower:
      return "slower";
    case Verdict::same:
      return "same";
    case Verdict::missing:
      return "missing";
    case Verdict::no_figure:
      return "no figure";
    case Verdict::added:
      return "new";
    case Verdict::failed:
      return "failed";
    case Verdict::skipped:
      return "skipped";
    case Verdict::not_comparable:
      return "n/a";
    case Verdict::not_run:
      return "not run";
    case Verdict::peer:
      return "peer";
  }
  return "?";
}

bool CompareRow::has_figures() const {
  return verdict == Verdict::same || verdict == Verdict::faster || verdict == Verdict::slower ||
         (verdict == Verdict::peer && base != 0);
}

bool CompareRow::judged() const {
  switch (verdict) {
    case Verdict::added:
    case Verdict::not_comparable:
    case Verdict::not_run:
    case Verdict::peer:
      return false;
    case Verdict::skipped:
      return fails;
    default:
      return true;
  }
}

const Json* metric_stats(const Json& row, const std::string& metric) {
  if (metric.empty() || !row["metrics"].contains(metric)) return nullptr;
  const auto& m = row["metrics"][metric];
  return m.is_object() ? &m : nullptr;
}

std::string per_second_twin(const std::string& metric) {
  static const std::string kPerClock = "pct_clock_peak";
  if (metric.size() < kPerClock.size() ||
      metric.compare(metric.size() - kPerClock.size(), kPerClock.size(), kPerClock) != 0) {
    return "";
  }
  return metric.substr(0, metric.size() - kPerClock.size()) + "tflops";
}

double noise_band_pct(const Json& s, double threshold_pct) {
  const bool drift = s.contains("drift_pct");
  const double spread = drift ? s["drift_pct"].get<double>() : 200.0 * std::sqrt(2.0) * s.value("cv", 0.0);
  const double cap = drift ? max_drift_band_pct(threshold_pct) : threshold_pct;
  return std::clamp(spread, kMinBandPct, std::max(kMinBandPct, cap));
}

bool Comparison::failed() const { return failing() > 0; }

int Comparison::failing() const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const CompareRow& r) { return r.fails; }));
}

namespace {

// Base and new of one device each (or the rows that span devices of each: no device, no model).
Comparison compare_parts(const ReportSet& base, const ReportSet& now, const CompareOptions& options) {
  const bool models = !base.report["device"].is_null() && !now.report["device"].is_null();
  const auto base_gpu = models ? gpu_model(base.report) : "", now_gpu = models ? gpu_model(now.report) : "";
  if (base_gpu != now_gpu && !options.allow_device_mismatch) {
    throw UsageError(
        fmt::format("the reports come from different GPUs ('{}' vs '{}'); "
                    "pass --allow-device-mismatch to compare them anyway",
                    base_gpu, now_gpu));
  }
  std::map<std::string, const Json*> now_by_key;
  for (const auto& r : now.report["results"])
    if (selected(options, r)) now_by_key[row_key(r)] = &r;

  Comparison out;
  if (models) out.caution = card_caution(base.report["device"], now.report["device"]);
  out.threshold_pct = options.threshold_pct;
  out.base_source = base.source;
  out.new_source = now.source;
  for (const auto& b : base.report["results"]) {
    if (!selected(options, b)) continue;
    CompareRow row = base_row(b);
    const auto it = now_by_key.find(row_key(b));
    if (it != now_by_key.end()) {
      judge(row, b, *it->second, options.threshold_pct);
      row.why = why_unjudged(row, b, *it->second);
      now_by_key.erase(it);
    } else if (!now.probes_run.count(row.probe)) {
      row.verdict = Verdict::not_run;
      row.why = "its probe did not run in new";
    } else {
      row.verdict = Verdict::missing;
      row.why = "missing from new, though its probe ran";
      row.fails = true;
    }
    out.rows.push_back(std::move(row));
  }
  for (const auto& r : now.report["results"]) {
    if (!now_by_key.count(row_key(r))) continue;
    CompareRow row = base_row(r);
    row.verdict = Verdict::added;
    row.why = "not in the baseline";
    out.rows.push_back(std::move(row));
  }
  return out;
}

// The side of a pair that lacks a device: `part` without its rows, as a run of `probes` that
// measured nothing there.
ReportSet empty_part(const ReportPart& part, const Json& probes, const std::string& source) {
  Json report = part.report;
  report["results"] = Json::array();
  report["findings"] = Json::array();
  report["tool"]["probes"] = probes;
  return as_report_set(std::move(report), source);
}

const ReportPart* part_of(const std::vector<ReportPart>& parts, int device) {
  for (const auto& p : parts)
    if (p.device == device) return &p;
  return nullptr;
}

void append(Comparison& into, Comparison&& c, int device, std::vector<std::string>& cautions) {
  for (auto& row : c.rows) {
    row.device = device;
    into.rows.push_back(std::move(row));
  }
  if (!c.caution.empty()) cautions.push_back(std::move(c.caution));
}

}  // namespace

Comparison compare_reports(const ReportSet& base, const ReportSet& now, const CompareOptions& options) {
  if (!has_devices(base.report) && !has_devices(now.report)) return compare_parts(base, now, options);
  const bool base_is_one = !has_devices(base.report);
  const auto base_parts = report_parts(base.report), now_parts = report_parts(now.report);
  Comparison out;
  out.threshold_pct = options.threshold_pct;
  out.base_source = base.source;
  out.new_source = now.source;
  std::vector<std::string> cautions;
  for (const auto& n : now_parts) {
    const ReportPart* b = base_is_one ? (n.device == kSpansDevices ? nullptr : &base_parts.front())
                                      : part_of(base_parts, n.device);
    const ReportSet now_set = as_report_set(n.report, now.source);
    const ReportSet base_set = b ? as_report_set(b->report, base.source) : empty_part(n, Json::array(), base.source);
    append(out, compare_parts(base_set, now_set, options), n.device, cautions);
  }
  for (const auto& b : base_is_one ? std::vector<ReportPart>{} : base_parts) {
    if (part_of(now_parts, b.device)) continue;
    // A device new did not run on: its rows are missing where new ran their probes on its other
    // devices; the rows that span devices, where new ran none, did not run.
    const Json probes = b.device == kSpansDevices ? Json::array() : now_parts.front().report["tool"]["probes"];
    const ReportSet now_set = empty_part(b, probes, now.source);
    append(out, compare_parts(as_report_set(b.report, base.source), now_set, options), b.device, cautions);
  }
  if (cautions.size() == 1) out.caution = cautions.front();
  if (cautions.size() > 1) {
    out.caution = fmt::format("{} of new's devices are other cards than base's (UUIDs differ): the bands hold the "
                              "drift between runs on one card, not the differences between cards",
                              cautions.size());
  }
  return out;
}

}  // namespace tkprobe
