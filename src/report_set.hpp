#pragma once
// Reading reports back for `compare` and `baseline`: one file, or a folder of them, each checked
// against the schema built into the binary and against what the schema cannot say (a row's primary
// metric is there, figures are finite, no two rows share probe and params). Anything wrong is a
// UsageError (exit 2) naming the file, the row and what is wrong.
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "src/json.hpp"

namespace tkprobe {

// results/report.schema.json as built into the binary.
const Json& report_schema();

// Every problem with one parsed report, each "/results/3/metrics/tflops: what is wrong"; empty when
// the report is sound.
std::vector<std::string> report_problems(const Json& report);

// The GPU model a report was measured on (a report of several devices: each model once, joined by
// " + "): compare and baseline hold reports of one model together.
std::string gpu_model(const Json& report);

// Rows match by probe and params; parameter order never matters.
std::string row_key(const Json& result);
std::string params_text(const Json& params);  // "key=value key=value", for reading

struct ReportSet {
  Json report;                       // every file's rows under the first file's header
  std::set<std::string> probes_run;  // what the run covered: tool.probes, else the probes with rows
  std::string source;                // the file or folder, for messages
};

// A report already read and checked, as one set.
ReportSet as_report_set(Json report, std::string source);

// Adds `more`'s rows (read from `file`) to `set`: one GPU model, no row twice. Throws UsageError.
void merge_into(ReportSet& set, const Json& more, const std::string& file);

// A report file as itself, or a folder's reports (*.json directly inside it, in name order). Throws
// UsageError for a folder with none.
std::vector<std::filesystem::path> report_files(const std::filesystem::path& file_or_folder);

// A report file, or a folder of them (*.json directly inside it, from one GPU model, with no row
// in two files). Throws UsageError.
ReportSet read_report_set(const std::filesystem::path& file_or_folder);

}  // namespace tkprobe
