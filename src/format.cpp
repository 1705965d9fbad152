#include "src/format.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "src/probe.hpp"

namespace tkprobe {
namespace {

struct Column {
  std::string key;
  bool is_param;
  std::string header;
};

using Grid = std::vector<std::vector<std::string>>;

std::string cell(const Json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return fmt::format("{:.4g}", v.get<double>());
  if (v.is_object() && v.contains("median")) return cell(v["median"]);
  return v.dump();
}

bool is_stats(const Json& v) { return v.is_object() && v.contains("median"); }

void add_unique(std::vector<std::string>& keys, const std::string& key) {
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
}

// Columns for one probe's rows: the device where they come from several (--devices), its params, a
// status column if any row is not ok, its metrics (a stats metric shows its median; the primary one
// is followed by its CV).
std::vector<Column> columns_for(const std::vector<const Json*>& rows) {
  std::vector<std::string> params, metrics;
  std::string primary;
  bool any_not_ok = false, devices = false;
  for (const Json* r : rows) {
    for (const auto& [k, _] : (*r)["params"].items()) add_unique(params, k);
    for (const auto& [k, _] : (*r)["metrics"].items()) add_unique(metrics, k);
    if (primary.empty()) primary = r->value("primary", "");
    any_not_ok |= r->value("status", "ok") != "ok";
    devices |= r->contains("device");
  }
  std::vector<Column> cols;
  if (devices) cols.push_back({"device", false, "device"});
  for (const auto& k : params) cols.push_back({k, true, k});
  if (any_not_ok) cols.push_back({"status", false, "status"});
  for (const auto& k : metrics) {
    std::vector<std::string> units;  // rows may differ (TFLOP/s for floats, TOP/s for s8)
    for (const Json* r : rows) {
      const auto& m = (*r)["metrics"];
      if (m.contains(k) && is_stats(m[k])) add_unique(units, m[k].value("unit", ""));
    }
    cols.push_back({k, false, units.empty() ? k : fmt::format("{} [{}]", k, fmt::join(units, ", "))});
    if (k == primary) cols.push_back({"cv%", false, "cv %"});
  }
  return cols;
}

std::string value_of(const Json& r, const Column& c, const std::string& primary) {
  if (c.is_param) return r["params"].contains(c.key) ? cell(r["params"][c.key]) : "-";
  if (c.key == "status") return r.value("status", "ok");
  if (c.key == "device") return r.contains("device") ? cell(r["device"]) : "-";
  const auto& m = r["metrics"];
  if (c.key == "cv%")
    return m.contains(primary) && is_stats(m[primary]) ? fmt::format("{:.2f}", 100 * m[primary].value("cv", 0.0)) : "-";
  return m.contains(c.key) ? cell(m[c.key]) : "-";
}

Grid grid_for(const std::vector<const Json*>& rows, const std::vector<Column>& cols) {
  Grid g;
  std::vector<std::string> header;
  for (const auto& c : cols) header.push_back(c.header);
  g.push_back(header);
  for (const Json* r : rows) {
    std::vector<std::string> line;
    for (const auto& c : cols) line.push_back(value_of(*r, c, r->value("primary", "")));
    g.push_back(line);
  }
  return g;
}

void print_aligned(std::ostream& out, const Grid& g) {
  std::vector<std::size_t> width(g[0].size(), 0);
  for (const auto& line : g)
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  for (std::size_t row = 0; row < g.size(); ++row) {
    std::string text;
    for (std::size_t i = 0; i < g[row].size(); ++i) text += fmt::format("{:>{}}  ", g[row][i], width[i]);
    out << text.substr(0, text.find_last_not_of(' ') + 1) << '\n';
    if (row == 0) {
      std::size_t total = 0;
      for (auto w : width) total += w + 2;
      out << std::string(total - 2, '-') << '\n';
    }
  }
}

// One result with many figures (info) reads better as "name  value" lines than as one wide row.
Grid transpose(const Grid& g) {
  Grid t{{"field", "value"}};
  for (std::size_t i = 0; i < g[0].size(); ++i) t.push_back({g[0][i], g[1][i]});
  return t;
}

constexpr std::size_t kMaxColumnsInARow = 8;

void print_markdown(std::ostream& out, const Grid& g) {
  for (std::size_t row = 0; row < g.size(); ++row) {
    std::string text = "|";
    for (const auto& c : g[row]) text += " " + c + " |";
    out << text << '\n';
    if (row == 0) {
      std::string rule = "|";
      for (std::size_t i = 0; i < g[row].size(); ++i) rule += "---|";
      out << rule << '\n';
    }
  }
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char ch : s) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) line += ',';
    line += csv_field(fields[i]);
  }
  return line;
}

// CSV is one table for the whole run, one line per figure, so a spreadsheet can filter and pivot it:
// the probe, every parameter any row has (empty where a row has none), the status and its reason, then
// the metric, whether it is the row's primary, its value and, for a measurement, unit and spread. A row
// with no figures (skipped, failed) still has its line, with the reason.
void print_csv(std::ostream& out, const Json& report) {
  std::vector<std::string> params;
  for (const auto& r : report["results"])
    for (const auto& [k, _] : r["params"].items()) add_unique(params, k);
  const bool devices = report.contains("devices");  // a column for the device each row ran on
  std::vector<std::string> header{"probe"};
  if (devices) header.push_back("device");
  header.insert(header.end(), params.begin(), params.end());
  for (const char* c : {"status", "reason", "metric", "primary", "value", "unit", "min", "q1", "q3", "max", "cv", "n"})
    header.push_back(c);
  out << csv_line(header) << '\n';
  for (const auto& r : report["results"]) {
    std::vector<std::string> lead{r["probe"].get<std::string>()};
    if (devices) lead.push_back(r.contains("device") ? cell(r["device"]) : "");
    for (const auto& p : params) lead.push_back(r["params"].contains(p) ? cell(r["params"][p]) : "");
    lead.push_back(r.value("status", "ok"));
    lead.push_back(r.value("reason", ""));
    const auto line = [&](const std::string& metric, const Json& v) {
      std::vector<std::string> f = lead;
      f.push_back(metric);
      f.push_back(metric.empty() ? "" : metric == r.value("primary", "") ? "yes" : "no");
      f.push_back(v.is_null() ? "" : is_stats(v) ? fmt::format("{}", v["median"].get<double>()) : cell(v));
      f.push_back(is_stats(v) ? v.value("unit", "") : "");
      for (const char* s : {"min", "q1", "q3", "max", "cv", "n"}) f.push_back(is_stats(v) ? cell(v[s]) : "");
      out << csv_line(f) << '\n';
    };
    if (r["metrics"].empty()) line("", Json());
    for (const auto& [metric, v] : r["metrics"].items()) line(metric, v);
  }
}

std::string device_text(const Json& d) {
  return fmt::format("{} · cc {} · {} SMs", d.value("name", "?"), d.value("cc", "?"), d.value("sms", 0));
}

// The run's GPU, or each of its GPUs (--devices) with its index, PCI bus and UUID.
std::string device_line(const Json& report) {
  const auto& t = report["tool"];
  const std::string tool = fmt::format("tkprobe {} ({})", t.value("version", "?"), t.value("git_sha", "?"));
  const std::string host = fmt::format("driver {} · CUDA runtime {} · {}", report["host"].value("driver", "?"),
                                       report["host"].value("cuda_runtime", "?"), tool);
  if (report.contains("devices")) {
    std::string line = fmt::format("{} devices · {}", report["devices"].size(), host);
    for (const auto& e : report["devices"]) {
      const Json& d = e["device"];
      line += fmt::format("\ndevice {}: {} · {} · {}", d.value("index", 0), device_text(d), d.value("pci_bus_id", "?"),
                          d.value("uuid", "?"));
    }
    return line;
  }
  const auto& d = report["device"];
  if (!d.is_object()) return tool;
  return device_text(d) + " · " + host;
}

// How long `probe` ran (telemetry's `seconds`), or -1 where the report does not say (several
// devices: each device's telemetry has its own).
double probe_seconds(const Json& report, const std::string& probe) {
  const Json* section =
      report.contains("telemetry") && report["telemetry"].contains(probe) ? &report["telemetry"][probe] : nullptr;
  return section && section->contains("seconds") ? (*section)["seconds"].get<double>() : -1;
}

}  // namespace

void print_report(std::ostream& out, const Json& report, Format format) {
  if (format == Format::json) {
    out << report_text(report);
    return;
  }
  if (format == Format::csv) {
    print_csv(out, report);
    return;
  }
  std::vector<std::string> probes;
  for (const auto& r : report["results"]) add_unique(probes, r["probe"].get<std::string>());
  out << (format == Format::markdown ? "_" : "") << device_line(report) << (format == Format::markdown ? "_" : "")
      << "\n";
  for (const auto& probe : probes) {
    std::vector<const Json*> rows;
    for (const auto& r : report["results"])
      if (r["probe"] == probe) rows.push_back(&r);
    out << '\n'
        << (format == Format::markdown ? "### " : "== ") << probe << (format == Format::markdown ? "" : " ==") << "\n";
    Grid g = grid_for(rows, columns_for(rows));
    if (rows.size() == 1 && g[0].size() > kMaxColumnsInARow) g = transpose(g);
    format == Format::markdown ? print_markdown(out, g) : print_aligned(out, g);
    for (const Json* r : rows) {
      if (r->contains("reason"))
        out << "  " << r->value("status", "") << ": " << (*r)["reason"].get<std::string>() << '\n';
    }
    for (const auto& f : report["findings"]) {
      if (f["probe"] != probe) continue;
      const std::string device = f.contains("device") ? fmt::format("device {}: ", f["device"].get<int>()) : "";
      out << (format == Format::markdown ? "- " : "  * ") << device << f["text"].get<std::string>() << '\n';
    }
    if (const double s = probe_seconds(report, probe); s >= 0)
      out << (format == Format::markdown ? fmt::format("\n_ran {:.1f} s_\n", s) : fmt::format("  ran {:.1f} s\n", s));
  }
}

}  // namespace tkprobe
