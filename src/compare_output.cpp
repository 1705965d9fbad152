#include "src/compare_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace tkprobe {
namespace {

constexpr std::size_t kClosestCalls = 10;

std::string figure(const CompareRow& r, double x) {
  return r.has_figures() ? fmt::format("{:.4g} {}", x, r.unit) : std::string("-");
}

// Free text from a report in a table cell, where a '|' would end the cell.
std::string cell_text(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

std::string table_row(const CompareRow& r, bool devices, bool whys) {
  const bool numbers = r.has_figures();
  const std::string device = !devices ? "" : r.device >= 0 ? fmt::format(" {} |", r.device) : " - |";
  return fmt::format(
      "| {} |{} {} | {} | {} | {} | {} | {} | {}{} |{}\n", r.probe, device, r.params, r.metric.empty() ? "-" : r.metric,
      figure(r, r.base), figure(r, r.now), numbers ? fmt::format("{:+.2f}%", r.delta_pct) : "-",
      numbers && r.verdict != Verdict::peer ? fmt::format("±{:.2f}%", r.band_pct) : "-", to_string(r.verdict),
      r.fails ? " **FAIL**" : "", whys ? fmt::format(" {} |", cell_text(r.why)) : "");
}

// Rows of a report of several devices carry a device column, and rows without a judged change a
// why column; other tables read as they always have.
std::string table(const std::vector<const CompareRow*>& rows) {
  const bool devices = std::any_of(rows.begin(), rows.end(), [](const CompareRow* r) { return r->device >= 0; });
  const bool whys = std::any_of(rows.begin(), rows.end(), [](const CompareRow* r) { return !r->why.empty(); });
  std::string md = fmt::format(
      "| probe |{} params | metric | base | new | change | band | verdict |{}\n"
      "|---|{}---|---|---:|---:|---:|---:|---|{}\n",
      devices ? " device |" : "", whys ? " why |" : "", devices ? "---:|" : "", whys ? "---|" : "");
  for (const CompareRow* r : rows) md += table_row(*r, devices, whys);
  return md;
}

// Judged rows that passed, nearest to failing first: how much of the threshold their loss used.
std::vector<const CompareRow*> closest_calls(const Comparison& c) {
  std::vector<const CompareRow*> rows;
  for (const auto& r : c.rows)
    if (r.judged() && !r.fails && r.has_figures()) rows.push_back(&r);
  std::sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) { return a->loss_pct > b->loss_pct; });
  if (rows.size() > kClosestCalls) rows.resize(kClosestCalls);
  return rows;
}

std::string xml_escaped(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string failure_message(const CompareRow& r, double threshold_pct) {
  if (!r.why.empty()) return r.why;  // missing, no figure, failed, skipped
  return fmt::format(
      "{}: {:.4g} -> {:.4g} {} ({:+.2f}%), worse by {:.2f}% against a threshold of {:.1f}% "
      "(band ±{:.2f}%)",
      r.metric, r.base, r.now, r.unit, r.delta_pct, r.loss_pct, threshold_pct, r.band_pct);
}

// Rows faster per clock and slower per second (CompareRow::per_second_loss_pct), or "".
std::string clock_fell_notes(const Comparison& c) {
  std::string md;
  for (const auto& r : c.rows) {
    if (r.per_second_loss_pct <= 0) continue;
    const std::string on = r.device >= 0 ? fmt::format(" device {}", r.device) : "";
    md += fmt::format("- {}{} {}: {} {:+.2f}%, but {:.2f}% slower per second\n", r.probe, on, r.params, r.metric,
                      r.delta_pct, r.per_second_loss_pct);
  }
  if (md.empty()) return md;
  return "### Faster per clock, slower per second\n\nThe SM clock fell further than these rows gained: a change "
         "that draws the card into its power cap, or the card's drift. Not judged; `scripts/ab.py` runs both builds "
         "in turns and tells which.\n\n" +
         md + "\n";
}

}  // namespace

std::string summary_line(const Comparison& c) {
  std::map<Verdict, int> counts;
  for (const auto& r : c.rows) ++counts[r.verdict];
  std::string summary;
  for (const auto& [v, n] : counts) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, to_string(v));
  const int failing = c.failing();
  return fmt::format("{} rows: {}. Threshold {:.1f}%: {}.", c.rows.size(), summary, c.threshold_pct,
                     failing ? fmt::format("{} failing row(s), exit 1", failing) : std::string("no regression"));
}

std::string to_markdown(const Comparison& c) {
  const int judged = static_cast<int>(std::count_if(c.rows.begin(), c.rows.end(), [](auto& r) { return r.judged(); }));
  std::string md = fmt::format("## tkprobe compare: {}\n\n{} of {} judged rows fail (threshold {:.1f}%). Base `{}`, new `{}`.\n\n",
                               c.failed() ? "FAIL" : "pass", c.failing(), judged, c.threshold_pct, c.base_source,
                               c.new_source);
  if (!c.caution.empty()) md += "> Caution: " + c.caution + ".\n\n";
  std::vector<const CompareRow*> failing, all;
  for (const auto& r : c.rows) {
    all.push_back(&r);
    if (r.fails) failing.push_back(&r);
  }
  if (!failing.empty()) md += "### Regressions\n\n" + table(failing) + "\n";
  if (const auto closest = closest_calls(c); !closest.empty()) md += "### Closest calls\n\n" + table(closest) + "\n";
  md += clock_fell_notes(c);
  md += fmt::format("<details><summary>Every row ({})</summary>\n\n{}\n</details>\n\n", all.size(), table(all));
  return md + summary_line(c) + "\n";
}

std::string to_junit(const Comparison& c) {
  std::string cases;
  int tests = 0;
  for (const auto& r : c.rows) {
    if (!r.judged()) continue;
    ++tests;
    const std::string on = r.device >= 0 ? fmt::format(" device={}", r.device) : "";
    const std::string name = xml_escaped(r.params.empty() ? r.probe + on : r.probe + on + " " + r.params);
    cases += fmt::format("    <testcase classname=\"tkprobe.{}\" name=\"{}\">", xml_escaped(r.probe), name);
    if (r.fails) {
      const std::string message = xml_escaped(failure_message(r, c.threshold_pct));
      cases += fmt::format("<failure message=\"{}\" type=\"{}\">{}</failure>", message, to_string(r.verdict), message);
    } else if (r.has_figures()) {
      cases += fmt::format("<system-out>{} {:.4g} -> {:.4g} {} ({:+.2f}%, band ±{:.2f}%): {}</system-out>",
                           xml_escaped(r.metric), r.base, r.now, xml_escaped(r.unit), r.delta_pct, r.band_pct,
                           to_string(r.verdict));
    }
    cases += "</testcase>\n";
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"tkprobe compare\" tests=\"{}\" "
      "failures=\"{}\" errors=\"0\" skipped=\"0\">\n{}  </testsuite>\n</testsuites>\n",
      tests, c.failing(), cases);
}

Json to_json(const Comparison& c) {
  Json rows = Json::array();
  for (const auto& r : c.rows) {
    rows.push_back({{"probe", r.probe},
                    {"params", r.params_json},
                    {"metric", r.metric},
                    {"base", r.base},
                    {"new", r.now},
                    {"delta_pct", r.delta_pct},
                    {"loss_pct", r.loss_pct},
                    {"band_pct", r.band_pct},
                    {"verdict", to_string(r.verdict)},
                    {"judged", r.judged()},
                    {"fails", r.fails}});
    if (r.device >= 0) rows.back()["device"] = r.device;  // rows of a report of several devices
    if (!r.why.empty()) rows.back()["why"] = r.why;
    if (r.per_second_loss_pct > 0) rows.back()["per_second_loss_pct"] = r.per_second_loss_pct;
  }
  Json out{{"threshold_pct", c.threshold_pct}, {"failed", c.failed()}, {"failing", c.failing()}, {"rows", rows}};
  if (!c.caution.empty()) out["caution"] = c.caution;
  return out;
}

}  // namespace tkprobe
