#include "src/report.hpp"

#include <cuda_runtime_api.h>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "src/errors.hpp"
#include "src/report_columns.hpp"
#include "src/report_set.hpp"

namespace tkprobe {

const char* tool_version();
const char* git_sha();

std::string_view to_string(Status s) {
  switch (s) {
    case Status::ok:
      return "ok";
    case Status::skipped:
      return "skipped";
    case Status::failed:
      return "failed";
  }
  return "failed";
}

Json stats_json(const Stats& s, std::string_view unit, Better better) {
  return Json{{"median", s.median}, {"min", s.min}, {"max", s.max},
              {"q1", s.q1},         {"q3", s.q3},   {"cv", s.cv},
              {"n", s.n},           {"unit", unit}, {"better", better == Better::higher ? "higher" : "lower"}};
}

Result& Result::metric(const std::string& name, const Stats& s, std::string_view unit, Better better) {
  metrics[name] = stats_json(s, unit, better);
  if (primary.empty()) primary = name;
  return *this;
}

Result& Result::checked(Json check_fields, bool passed) {
  check = std::move(check_fields);
  check["passed"] = passed;
  if (!passed && status == Status::ok) status = Status::failed;
  return *this;
}

static Json result_json(const Result& r) {
  Json j{{"probe", r.probe}, {"params", r.params}, {"status", to_string(r.status)}};
  if (!r.reason.empty()) j["reason"] = r.reason;
  j["metrics"] = r.metrics;
  if (!r.primary.empty()) j["primary"] = r.primary;
  if (!r.check.is_null()) j["check"] = r.check;
  if (!r.telemetry.is_null()) j["telemetry"] = r.telemetry;
  if (r.peer) j["peer"] = true;
  return j;
}

Json to_json(const Report& report) {
  Json j{{"schema", kReportSchemaV1}, {"tool", report.tool}, {"host", report.host}, {"device", report.device}};
  Json results = Json::array();
  for (const auto& r : report.results) results.push_back(result_json(r));
  j["results"] = std::move(results);
  Json findings = Json::array();
  for (const auto& f : report.findings) findings.push_back({{"probe", f.probe}, {"text", f.text}});
  j["findings"] = std::move(findings);
  Json compact = compact_report(std::move(j));
  for (const auto& [probe, seconds] : report.seconds) {
    Json& section = compact["telemetry"][probe];
    if (section.is_null()) section = {{"rows", 0}, {"throttled_rows", 0}};  // no row took NVML readings
    section["seconds"] = std::round(seconds * 10) / 10;
  }
  return compact;
}

namespace {

constexpr int kSignificantDigits = 6;
const char* const kNvmlRanges[] = {"sm_clock_mhz", "power_w", "temperature_c"};

double round_significant(double x) {
  if (!std::isfinite(x) || x == 0) return x;
  char text[32];
  std::snprintf(text, sizeof text, "%.*g", kSignificantDigits, x);
  return std::strtod(text, nullptr);
}

void round_numbers(Json& j) {
  if (j.is_number_float()) {
    j = round_significant(j.get<double>());
  } else if (j.is_structured()) {
    for (auto& child : j) round_numbers(child);
  }
}

// Widens `range` ([low, high], or null) to take in [low, high].
void widen(Json& range, const Json& reading) {
  const double low = reading[0], high = reading[1];
  range = range.is_null() ? Json::array({low, high})
                          : Json::array({std::min(range[0].get<double>(), low), std::max(range[1].get<double>(), high)});
}

// Moves a version 1 row's NVML readings into its probe's summary; keeps what is the row's own.
void fold_row_telemetry(Json& row, Json& summary) {
  Json& t = row["telemetry"];
  if (summary.is_null()) summary = Json::object();
  const bool throttled = t.value("throttled", false);
  summary["rows"] = summary.value("rows", 0) + 1;
  summary["throttled_rows"] = summary.value("throttled_rows", 0) + int(throttled);
  if (t.contains("nvml")) summary["nvml"] = t["nvml"];
  Json kept = Json::object();
  if (t.contains("kernel_sm_clock_mhz")) kept["kernel_sm_clock_mhz"] = t["kernel_sm_clock_mhz"];
  if (!t.value("samples_converged", true)) kept["samples_converged"] = false;
  if (!t.value("clock_settled", true)) kept["clock_settled"] = false;
  for (const char* name : kNvmlRanges) {
    if (t.contains(name)) widen(summary[name], t[name]);
  }
  if (throttled) {  // the event and its reasons; the readings are in the summary's ranges
    kept["throttled"] = true;
    kept["reasons"] = t["reasons"];
  }
  t = std::move(kept);
}

// Version 2 writes a check's `what` only where it differs from the previous check of the same
// probe: rows of one kind come together, and their shared description is most of a check's text.
void drop_repeated_check_texts(Json& results) {
  std::map<std::string, std::string> last_what;  // by probe
  for (auto& row : results) {
    if (!row.contains("check") || !row["check"].contains("what")) continue;
    std::string& last = last_what[row["probe"].get<std::string>()];
    const std::string what = row["check"]["what"];
    if (what == last) {
      row["check"].erase("what");
    } else {
      last = what;
    }
  }
}

}  // namespace

void restore_check_texts(Json& report) {
  std::map<std::string, Json> last_what;  // by probe
  for (auto& row : report["results"]) {
    if (!row.contains("check")) continue;
    Json& last = last_what[row["probe"].get<std::string>()];
    if (row["check"].contains("what")) {
      last = row["check"]["what"];
    } else if (!last.is_null()) {
      row["check"]["what"] = last;
    }
  }
}

Json compact_report(Json report) {
  if (report.value("schema", "") == kReportSchemaV1) {
    Json by_probe = Json::object();
    for (auto& row : report["results"]) {
      if (row.contains("telemetry")) fold_row_telemetry(row, by_probe[row["probe"].get<std::string>()]);
    }
    Json v2{{"schema", kReportSchema}};
    for (const char* section : {"tool", "host", "device"}) v2[section] = std::move(report[section]);
    v2["telemetry"] = std::move(by_probe);
    v2["results"] = std::move(report["results"]);
    v2["findings"] = std::move(report["findings"]);
    report = std::move(v2);
  } else {
    restore_check_texts(report);  // what a version 2 report left out, so the rule below applies afresh
  }
  drop_repeated_check_texts(report["results"]);
  round_numbers(report);
  return report;
}

std::string report_text(const Json& report) {
  const Json doc = report.value("schema", "") == kReportSchema ? to_columns(report) : report;
  std::string text = "{";
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    text += (it == doc.begin() ? "\n  " : ",\n  ") + Json(it.key()).dump() + ": ";
    const bool one_per_line = !it->empty() && (it.key() == "results" || it.key() == "findings" ||
                                               it.key() == "kinds" || it.key() == "devices");
    if (!one_per_line) {
      text += it->dump();
    } else if (it->is_array()) {
      for (std::size_t i = 0; i < it->size(); ++i) text += (i == 0 ? "[\n    " : ",\n    ") + (*it)[i].dump();
      text += "\n  ]";
    } else {
      for (auto e = it->begin(); e != it->end(); ++e) {
        text += (e == it->begin() ? "{\n    " : ",\n    ") + Json(e.key()).dump() + ": " + e->dump();
      }
      text += "\n  }";
    }
  }
  return text + "\n}\n";
}

std::string version_text() {
  const auto cuda = [](int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); };
  int driver = 0;  // 0 where no driver is installed (cudart loads libcuda only to ask)
  const bool has_driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0;
  return fmt::format("tkprobe {} ({})\nbuilt with the CUDA {} runtime, for drivers supporting CUDA {} or later; this "
                     "machine's driver: {}",
                     tool_version(), git_sha(), cuda(CUDART_VERSION), cuda(CUDART_VERSION),
                     has_driver ? "CUDA " + cuda(driver) : std::string("none"));
}

Json tool_section(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
  const auto now = std::chrono::system_clock::now();
  return {{"version", tool_version()},
          {"git_sha", git_sha()},
          {"command_line", line},
          {"started_at", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(now)))}};
}

Json host_section(std::string_view driver) {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  return {{"hostname", name},
          {"driver", driver},
          {"cuda_runtime", fmt::format("{}.{}", runtime / 1000, runtime % 1000 / 10)}};
}

void require_writable_target(const std::filesystem::path& path, std::string_view option) {
  namespace fs = std::filesystem;
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw UsageError(fmt::format("{} {}: folder '{}' does not exist (give a path in an existing folder{})", option,
                                 path.string(), dir.string(), option == "--json" ? ", or - for stdout" : ""));
  }
  if (access(dir.c_str(), W_OK) != 0) {
    throw UsageError(fmt::format("{} {}: folder '{}' is not writable", option, path.string(), dir.string()));
  }
  if (fs::is_directory(path, ec)) {
    throw UsageError(fmt::format("{} {}: is a folder; give a file name", option, path.string()));
  }
}

void write_file_atomic(const std::filesystem::path& path, std::string_view text) {
  const auto tmp = path.string() + fmt::format(".tmp.{}", getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot write " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename " + tmp + " to " + path.string());
  }
}

Json read_report(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw UsageError(fmt::format("{}: is a folder; give a report file", path.string()));
  }
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("{}: cannot open the file", path.string()));
  return parse_report(std::string(std::istreambuf_iterator<char>(in), {}), path.string());
}

namespace {

// Every version read, newest first, for the messages about a file that declares none of them.
std::string valid_schemas() { return fmt::format("'{}', '{}', '{}'", kReportSchemaV3, kReportSchema, kReportSchemaV1); }

// `text` as JSON with a "schema" it reads.
Json declared_report(std::string_view text, const std::string& source) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw UsageError(
        fmt::format("{}: not JSON (byte {}), so not a tkprobe report (valid: {})", source, e.byte, valid_schemas()));
  } catch (const Json::exception&) {  // out_of_range: a number JSON cannot hold as a double (1e999)
    throw UsageError(fmt::format("{}: holds a number out of a double's range, so not a tkprobe report", source));
  }
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string()) {
    throw UsageError(fmt::format("{}: not a tkprobe report: no \"schema\" field (valid: {})", source, valid_schemas()));
  }
  const auto schema = j["schema"].get<std::string>();
  if (schema != kReportSchemaV3 && schema != kReportSchema && schema != kReportSchemaV1) {
    throw UsageError(
        fmt::format("{}: report schema '{}' is not supported (valid: {})", source, schema, valid_schemas()));
  }
  return j;
}

}  // namespace

Json parse_report(std::string_view text, const std::string& source) {
  Json j = declared_report(text, source);
  const auto schema = j["schema"].get<std::string>();
  // A version 3 file is checked as the version 2 document it encodes: messages name the file's version.
  const std::string file = fmt::format("{} ({})", source, schema);
  if (schema == kReportSchemaV3) {
    try {
      j = from_columns(j);
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("{}: {}", file, e.what()));
    } catch (const Json::exception& e) {  // a kind or value of the wrong JSON type
      throw UsageError(fmt::format("{}: not well-formed ({})", file, e.what()));
    }
  }
  if (schema != kReportSchemaV1) restore_check_texts(j);
  const auto problems = report_problems(j);
  if (!problems.empty()) {
    throw UsageError(
        fmt::format("{}: {}{}", file, problems.front(),
                    problems.size() > 1 ? fmt::format(" (and {} more problems)", problems.size() - 1) : std::string()));
  }
  return j;
}

}  // namespace tkprobe
