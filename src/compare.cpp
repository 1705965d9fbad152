#include "src/compare.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "src/errors.hpp"

namespace tkprobe {
namespace {

// Canonical key: nlohmann::json (unordered) sorts object keys, so param order never matters.
std::string result_key(const Json& r) {
  return r.value("probe", "") + "|" + nlohmann::json::parse(r.value("params", Json::object()).dump()).dump();
}

std::string params_text(const Json& params) {
  std::string text;
  for (const auto& [k, v] : params.items()) {
    text += (text.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return text;
}

std::string device_name(const Json& report) {
  const auto& d = report.contains("device") ? report["device"] : Json();
  return d.is_object() ? d.value("name", "unknown") : "unknown";
}

CompareRow base_row(const Json& r) {
  CompareRow row;
  row.probe = r.value("probe", "");
  row.params = params_text(r.value("params", Json::object()));
  row.metric = r.value("primary", "");
  return row;
}

const Json* primary_stats(const Json& r, const std::string& metric) {
  if (metric.empty() || !r.contains("metrics") || !r["metrics"].contains(metric)) return nullptr;
  const auto& m = r["metrics"][metric];
  return m.is_object() && m.contains("median") ? &m : nullptr;
}

void judge(CompareRow& row, const Json& base, const Json& now, double threshold_pct) {
  const auto base_status = base.value("status", "ok");
  const auto now_status = now.value("status", "ok");
  if (now_status == "failed") {
    row.verdict = Verdict::failed;
    row.fails = true;
    return;
  }
  if (base_status != "ok" || now_status != "ok") {
    row.verdict = Verdict::skipped;
    row.fails = base_status == "ok";  // a result that stopped running has no number to defend it
    return;
  }
  const Json* b = primary_stats(base, row.metric);
  const Json* n = primary_stats(now, row.metric);
  if (!b || !n || (*b)["median"].get<double>() == 0) {
    row.verdict = Verdict::not_comparable;
    return;
  }
  row.unit = b->value("unit", "");
  row.base = (*b)["median"].get<double>();
  row.now = (*n)["median"].get<double>();
  row.delta_pct = 100.0 * (row.now - row.base) / row.base;
  row.noise_pct = noise_band_pct(b->value("cv", 0.0), n->value("cv", 0.0));
  const bool higher_is_better = b->value("better", "higher") == "higher";
  const double gain_pct = higher_is_better ? row.delta_pct : -row.delta_pct;
  if (std::fabs(row.delta_pct) <= row.noise_pct) {
    row.verdict = Verdict::same;
  } else {
    row.verdict = gain_pct > 0 ? Verdict::faster : Verdict::slower;
    row.fails = gain_pct < -threshold_pct;
  }
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
    case Verdict::added:
      return "new";
    case Verdict::failed:
      return "failed";
    case Verdict::skipped:
      return "skipped";
    case Verdict::not_comparable:
      return "n/a";
  }
  return "?";
}

double noise_band_pct(double cv_base, double cv_now) { return 200.0 * std::sqrt(cv_base * cv_base + cv_now * cv_now); }

bool Comparison::failed() const {
  for (const auto& r : rows)
    if (r.fails) return true;
  return false;
}

Comparison compare_reports(const Json& base, const Json& now, const CompareOptions& options) {
  const auto base_gpu = device_name(base), now_gpu = device_name(now);
  if (base_gpu != now_gpu && !options.allow_device_mismatch) {
    throw UsageError(
        fmt::format("the reports come from different GPUs ('{}' vs '{}'); "
                    "pass --allow-device-mismatch to compare them anyway",
                    base_gpu, now_gpu));
  }
  std::map<std::string, const Json*> now_by_key;
  for (const auto& r : now["results"]) now_by_key[result_key(r)] = &r;

  Comparison out;
  out.threshold_pct = options.threshold_pct;
  for (const auto& b : base["results"]) {
    CompareRow row = base_row(b);
    const auto it = now_by_key.find(result_key(b));
    if (it == now_by_key.end()) {
      row.verdict = Verdict::missing;
      row.fails = true;
    } else {
      judge(row, b, *it->second, options.threshold_pct);
      now_by_key.erase(it);
    }
    out.rows.push_back(std::move(row));
  }
  for (const auto& r : now["results"]) {
    if (!now_by_key.count(result_key(r))) continue;
    CompareRow row = base_row(r);
    row.verdict = Verdict::added;
    out.rows.push_back(std::move(row));
  }
  return out;
}

std::string to_markdown(const Comparison& c) {
  std::string md =
      "| probe | params | metric | base | new | change | noise | verdict |\n"
      "|---|---|---|---:|---:|---:|---:|---|\n";
  std::map<Verdict, int> counts;
  int failing = 0;
  for (const auto& r : c.rows) {
    ++counts[r.verdict];
    failing += r.fails;
    const bool numbers = r.verdict == Verdict::same || r.verdict == Verdict::faster || r.verdict == Verdict::slower;
    const auto num = [&](double x) { return numbers ? fmt::format("{:.4g} {}", x, r.unit) : std::string("-"); };
    md += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {}{} |\n", r.probe, r.params, r.metric.empty() ? "-" : r.metric,
        num(r.base), num(r.now), numbers ? fmt::format("{:+.2f}%", r.delta_pct) : "-",
        numbers ? fmt::format("±{:.2f}%", r.noise_pct) : "-", to_string(r.verdict), r.fails ? " **FAIL**" : "");
  }
  std::string summary;
  for (const auto& [v, n] : counts) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, to_string(v));
  md += fmt::format("\n{} rows: {}. Threshold {:.1f}%: {}.\n", c.rows.size(), summary, c.threshold_pct,
                    failing ? fmt::format("{} failing row(s), exit 1", failing) : std::string("no regression"));
  return md;
}

}  // namespace tkprobe
