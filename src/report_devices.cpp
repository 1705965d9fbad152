#include "src/report_devices.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

#include "src/report.hpp"

namespace tkprobe {
namespace {

// `entry` (a row or finding) with "device": `index` right after its "probe", where a reader looks.
Json tagged(const Json& entry, int index) {
  Json out = Json::object();
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    out[it.key()] = *it;
    if (it.key() == "probe") out["device"] = index;
  }
  return out;
}

// The entries of `list` tagged with `device` (kSpansDevices: untagged), their tags dropped.
Json entries_of(const Json& list, int device) {
  Json out = Json::array();
  for (const auto& e : list) {
    if (e.value("device", kSpansDevices) != device) continue;
    Json copy = e;
    copy.erase("device");
    out.push_back(std::move(copy));
  }
  return out;
}

Json part_report(const Json& report, const Json& probes, const Json& device, const Json* telemetry, int index) {
  Json part{{"schema", report["schema"]}, {"tool", report["tool"]}, {"host", report["host"]}, {"device", device}};
  if (part["tool"].contains("probes")) part["tool"]["probes"] = probes;  // else the rows say what ran
  if (telemetry) part["telemetry"] = *telemetry;
  part["results"] = entries_of(report["results"], index);
  part["findings"] = entries_of(report["findings"], index);
  return part;
}

void check_tags(const Json& list, const std::string& section, const std::set<long long>& listed, bool has_list,
                std::vector<std::string>& problems) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].contains("device")) continue;
    const std::string at = fmt::format("/{}/{}/device", section, i);
    if (!has_list) {
      problems.push_back(at + ": names a device, but the report has no \"devices\" section");
    } else if (!listed.count(list[i]["device"].get<long long>())) {
      problems.push_back(fmt::format("{}: device {} is not in \"devices\"", at, list[i]["device"].dump()));
    }
  }
}

}  // namespace

bool has_devices(const Json& report) { return report.contains("devices"); }

Json merge_device_runs(Json tool, Json host, const std::vector<DeviceRun>& runs, const Json& spanning) {
  Json devices = Json::array(), results = Json::array(), findings = Json::array();
  for (const DeviceRun& run : runs) {
    const bool ran = !run.report.is_null();
    Json entry{{"device", ran ? run.report["device"] : run.device}};
    if (ran && run.report.contains("telemetry")) entry["telemetry"] = run.report["telemetry"];
    const int index = entry["device"]["index"];
    devices.push_back(std::move(entry));
    if (!ran) continue;
    for (const auto& r : run.report["results"]) results.push_back(tagged(r, index));
    for (const auto& f : run.report["findings"]) findings.push_back(tagged(f, index));
  }
  Json report{
      {"schema", kReportSchema}, {"tool", std::move(tool)}, {"host", std::move(host)}, {"devices", std::move(devices)}};
  if (!spanning.is_null()) {
    if (spanning.contains("telemetry")) report["telemetry"] = spanning["telemetry"];
    for (const auto& r : spanning["results"]) results.push_back(r);
    for (const auto& f : spanning["findings"]) findings.push_back(f);
  }
  report["results"] = std::move(results);
  report["findings"] = std::move(findings);
  return compact_report(std::move(report));
}

std::vector<ReportPart> report_parts(const Json& report) {
  if (!has_devices(report)) return {{report["device"].value("index", 0), report}};
  std::set<std::string> spanning;
  for (const auto& r : report["results"])
    if (!r.contains("device")) spanning.insert(r["probe"].get<std::string>());
  Json per_device = Json::array(), across(spanning);
  for (const auto& p : report["tool"].value("probes", Json::array()))
    if (!spanning.count(p)) per_device.push_back(p);

  std::vector<ReportPart> parts;
  for (const auto& entry : report["devices"]) {
    const int index = entry["device"]["index"];
    const Json* telemetry = entry.contains("telemetry") ? &entry["telemetry"] : nullptr;
    parts.push_back({index, part_report(report, per_device, entry["device"], telemetry, index)});
  }
  if (!spanning.empty()) {
    const Json* telemetry = report.contains("telemetry") ? &report["telemetry"] : nullptr;
    parts.push_back({kSpansDevices, part_report(report, across, nullptr, telemetry, kSpansDevices)});
  }
  return parts;
}

void check_devices(const Json& report, std::vector<std::string>& problems) {
  const bool has_list = has_devices(report);
  if (has_list && report.contains("device")) {
    problems.push_back("/: holds both \"device\" (a run of one device) and \"devices\" (a run of several)");
  }
  std::set<long long> listed;
  std::map<std::string, std::size_t> uuids;
  if (has_list) {
    const Json& devices = report["devices"];
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const Json& d = devices[i]["device"];
      if (!listed.insert(d["index"].get<long long>()).second) {
        problems.push_back(fmt::format("/devices/{}/device/index: device {} is listed twice", i, d["index"].dump()));
      }
      if (!d.contains("uuid")) continue;
      const auto [first, fresh] = uuids.emplace(d["uuid"].get<std::string>(), i);
      if (!fresh) {
        problems.push_back(fmt::format("/devices/{}/device/uuid: {} is also /devices/{}'s: one card listed twice", i,
                                       d["uuid"].get<std::string>(), first->second));
      }
    }
  }
  check_tags(report["results"], "results", listed, has_list, problems);
  check_tags(report["findings"], "findings", listed, has_list, problems);
}

}  // namespace tkprobe
