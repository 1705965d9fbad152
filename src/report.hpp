#pragma once
// The versioned JSON report (results/README.md documents it; results/report.schema.json
// is the machine-checked form). Every command builds one of these; --json writes it.
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "src/json.hpp"
#include "src/stats.hpp"

namespace tkprobe {

// Version 2 is the document every command holds in memory; files are written as version 3, the
// same document in columns (src/report_columns.hpp). Versions 1 (each row's NVML telemetry in full,
// numbers to 17 digits) and 2 are still read. results/README.md says what changed.
inline constexpr std::string_view kReportSchema = "tkprobe.report/2";
inline constexpr std::string_view kReportSchemaV1 = "tkprobe.report/1";
inline constexpr std::string_view kReportSchemaV3 = "tkprobe.report/3";

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
  // Reported, not judged: the row's figures move between processes on unchanged code by more than
  // compare's threshold can hold (`why` gives the measured spread), so compare calls the row n/a
  // instead of holding any metric of it to a band. Call it after the metrics.
  Result& not_judged(std::string why) {
    primary.clear();
    return value("not_judged", std::move(why));
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
  std::map<std::string, double> seconds;  // wall time each probe ran, by probe: telemetry's `seconds`
};

Json stats_json(const Stats& s, std::string_view unit, Better better);
Json to_json(const Report& report);  // version 2 (compact_report of the full form)

// A report of either version as version 2: NVML's readings (SM clock, power, temperature before
// and after each measurement) gathered once per probe as ranges, each row keeping its own kernel
// clock and, if the GPU reported throttling, `throttled` and why; every non-integer number to 6 significant
// digits (within 5e-6 relative; compare's narrowest band is 0.5%, the quietest row's cv 4e-6). Rows, params,
// metrics and checks are otherwise unchanged, except that a check's `what` is written only where
// it differs from the previous check of the same probe. A version 2 report passes through with its
// numbers rounded.
Json compact_report(Json report);

// Puts back the `what` of every check a version 2 report left out (read_report does this).
void restore_check_texts(Json& report);

// A report as text: one line per section, per probe's kinds, per device and per row, so a diff shows
// which rows moved. A version 2 document is written as version 3.
std::string report_text(const Json& report);

// What `tkprobe --version` prints: "tkprobe 0.1.0 (<commit>)" (the version and commit every report's
// tool section holds), then the CUDA runtime it was built with, the drivers it runs on, and this
// machine's driver.
std::string version_text();

// The tool/host sections for a run started with this command line.
Json tool_section(const std::vector<std::string>& argv);
Json host_section(std::string_view driver);

// Writes the whole text or nothing: a temporary file in the same folder, then rename().
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

// Checks that `path` (given with `option`) can receive a file later: its folder exists and is
// writable. Throws UsageError naming the problem.
void require_writable_target(const std::filesystem::path& path, std::string_view option = "--json");

// Reads a report (version 1, 2 or 3) as version 1 or 2 (a version 3 file decoded); throws
// UsageError when the file is missing, is not JSON, is not a tkprobe report, or carries another
// schema version (the message names the valid ones), or is not sound (the message names the version
// the file declares, not the one it was decoded to).
Json read_report(const std::filesystem::path& path);
// The same for a report's text (`source` names it in messages): what `tkprobe <probe> --json -` writes.
Json parse_report(std::string_view text, const std::string& source);

}  // namespace tkprobe
