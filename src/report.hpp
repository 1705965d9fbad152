#pragma once
// The versioned JSON report (results/README.md documents it; results/report.schema.json
// is the machine-checked form). Every command builds one of these; --json writes it.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "src/json.hpp"
#include "src/stats.hpp"

namespace tkprobe {

inline constexpr std::string_view kReportSchema = "tkprobe.report/1";

enum class Status { ok, skipped, failed };
std::string_view to_string(Status);

// Which way is better for a metric: compare uses it to call a change faster or slower.
enum class Better { higher, lower };

// One measured configuration of one probe.
struct Result {
  std::string probe;
  Json params = Json::object();
  Status status = Status::ok;
  std::string reason;  // why skipped or failed
  Json metrics = Json::object();
  std::string primary;       // the metric compare judges this row by
  Json check = nullptr;      // {"passed": bool, ...} or null
  Json telemetry = nullptr;  // from the harness, or null
  bool peer = false;  // a peer's figure (cuBLASLt, the driver's copy): reported for context, never judged

  Result(std::string probe_name, Json parameters = Json::object())
      : probe(std::move(probe_name)), params(std::move(parameters)) {}

  // A repeated measurement: median, spread, sample count, unit and direction.
  Result& metric(const std::string& name, const Stats& s, std::string_view unit, Better better);
  // A single derived figure (a model prediction, a ratio, a count).
  Result& value(const std::string& name, Json v) {
    metrics[name] = std::move(v);
    return *this;
  }
  // Records a pass/fail check; a failing check makes the result `failed`.
  Result& checked(Json check_fields, bool passed);
};

struct Finding {
  std::string probe;
  std::string text;
};

struct Report {
  Json tool = Json::object();
  Json host = Json::object();
  Json device = nullptr;
  std::vector<Result> results;
  std::vector<Finding> findings;  // plain-language conclusions a probe draws from its numbers
};

Json stats_json(const Stats& s, std::string_view unit, Better better);
Json to_json(const Report& report);

// "tkprobe 0.1.0 (<commit>)": what `tkprobe --version` prints and every report's tool section holds.
std::string version_text();

// The tool/host sections for a run started with this command line.
Json tool_section(const std::vector<std::string>& argv);
Json host_section(std::string_view driver);

// Writes the whole text or nothing: a temporary file in the same folder, then rename().
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

// Checks that `path` (given with `option`) can receive a file later: its folder exists and is
// writable. Throws UsageError naming the problem.
void require_writable_target(const std::filesystem::path& path, std::string_view option = "--json");

// Reads a report; throws UsageError when the file is missing, is not JSON, is not a tkprobe
// report, or carries another schema version (the message names the valid one).
Json read_report(const std::filesystem::path& path);

}  // namespace tkprobe
