#include "src/report_set.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "src/errors.hpp"
#include "src/report.hpp"
#include "src/report_devices.hpp"
#include "src/schema.hpp"

namespace tkprobe {

const char* report_schema_text();  // generated from results/report.schema.json

const Json& report_schema() {
  static const Json schema = Json::parse(report_schema_text());
  return schema;
}

std::string gpu_model(const Json& report) {
  if (!has_devices(report)) return report["device"]["name"].get<std::string>();
  std::set<std::string> names;  // a node's cards, once each: "NVIDIA H200", or "A + B" for a mix
  for (const auto& d : report["devices"]) names.insert(d["device"]["name"].get<std::string>());
  std::string model;
  for (const auto& n : names) model += (model.empty() ? "" : " + ") + n;
  return model;
}

std::string row_key(const Json& result) {
  // Json keeps keys in the order written; nlohmann::json sorts them, so its dump is canonical.
  std::string key =
      result.value("probe", "") + "|" + nlohmann::json::parse(result.value("params", Json::object()).dump()).dump();
  if (result.contains("device")) key += "|device " + result["device"].dump();  // a report of several devices
  return key;
}

std::string params_text(const Json& params) {
  std::string text;
  for (const auto& [k, v] : params.items()) {
    text += (text.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return text;
}

namespace {

void check_finite(const Json& stats, const std::string& at, std::vector<std::string>& problems) {
  for (const auto& [name, value] : stats.items()) {
    if (value.is_number() && !std::isfinite(value.get<double>())) {
      problems.push_back(fmt::format("{}/{}: {} is not a finite number", at, name, value.dump()));
    }
  }
}

// What the schema cannot say about one row.
void check_row(const Json& r, const std::string& at, std::vector<std::string>& problems) {
  for (const auto& [name, metric] : r["metrics"].items()) {
    if (metric.is_object()) check_finite(metric, at + "/metrics/" + name, problems);
  }
  const std::string primary = r.value("primary", "");
  if (primary.empty() || r["status"] != "ok") return;
  const Json* m = r["metrics"].contains(primary) ? &r["metrics"][primary] : nullptr;
  if (!m || !m->is_object()) {
    problems.push_back(fmt::format("{}: its primary metric '{}' has no statistics (median, cv, ...) in \"metrics\"",
                                   at, primary));
  }
}

}  // namespace

std::vector<std::string> report_problems(const Json& report) {
  std::vector<std::string> problems = validate_schema(report_schema(), report);
  if (!problems.empty()) return problems;
  check_devices(report, problems);
  std::map<std::string, std::size_t> first_row;
  const Json& results = report["results"];
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string at = fmt::format("/results/{}", i);
    check_row(results[i], at, problems);
    const auto [it, fresh] = first_row.emplace(row_key(results[i]), i);
    if (!fresh) {
      problems.push_back(fmt::format("{}: same probe and params as /results/{} ({} {})", at, it->second,
                                     results[i]["probe"].get<std::string>(), params_text(results[i]["params"])));
    }
  }
  return problems;
}

std::vector<std::filesystem::path> report_files(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return {path};
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw UsageError(fmt::format("{}: a folder with no reports (*.json) in it", path.string()));
  return files;
}

namespace {

std::set<std::string> probes_run(const Json& report) {
  std::set<std::string> probes;
  if (report["tool"].contains("probes")) {
    for (const auto& p : report["tool"]["probes"]) probes.insert(p.get<std::string>());
  } else {
    for (const auto& r : report["results"]) probes.insert(r["probe"].get<std::string>());
  }
  return probes;
}

}  // namespace

ReportSet as_report_set(Json report, std::string source) {
  ReportSet set{std::move(report), {}, std::move(source)};
  set.probes_run = probes_run(set.report);
  return set;
}

void merge_into(ReportSet& set, const Json& more, const std::string& file) {
  if (has_devices(set.report) || has_devices(more)) {
    throw UsageError(fmt::format("{}: a folder holds a report of several devices (--devices) beside others: give "
                                 "that report on its own",
                                 file));
  }
  if (gpu_model(more) != gpu_model(set.report)) {
    throw UsageError(fmt::format("{}: from a {}, but the folder's first report is from a {}: one GPU model per "
                                 "folder",
                                 file, gpu_model(more), gpu_model(set.report)));
  }
  std::set<std::string> keys;
  for (const auto& r : set.report["results"]) keys.insert(row_key(r));
  for (std::size_t i = 0; i < more["results"].size(); ++i) {
    const Json& r = more["results"][i];
    if (keys.count(row_key(r))) {
      throw UsageError(fmt::format("{}: /results/{} ({} {}) is also in another report of {}", file, i,
                                   r["probe"].get<std::string>(), params_text(r["params"]), set.source));
    }
    set.report["results"].push_back(r);
  }
  for (const auto& f : more["findings"]) set.report["findings"].push_back(f);
  const auto probes = probes_run(more);
  set.probes_run.insert(probes.begin(), probes.end());
}


ReportSet read_report_set(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return as_report_set(read_report(path), path.string());
  const auto files = report_files(path);
  ReportSet set = as_report_set(read_report(files.front()), path.string());
  for (std::size_t i = 1; i < files.size(); ++i) merge_into(set, read_report(files[i]), files[i].string());
  return set;
}

}  // namespace tkprobe
