#include "src/report_columns.hpp"

#include <fmt/format.h>

#include <array>
#include <stdexcept>
#include <string>

#include "src/report.hpp"

namespace tkprobe {
namespace {

// A statistic as stats_json and tkprobe baseline write it, key for key in this order.
constexpr std::array<const char*, 7> kStatFields = {"median", "min", "max", "q1", "q3", "cv", "n"};
constexpr std::array<const char*, 2> kDriftFields = {"drift_pct", "runs"};

// Whether `v` has exactly the fields of a statistic, in their order, so that an array and its
// kind's unit and better say all of it.
bool is_plain_stat(const Json& v) {
  if (!v.is_object() || (v.size() != 9 && v.size() != 11)) return false;
  auto it = v.begin();
  for (const char* f : kStatFields) {
    if ((it++).key() != f) return false;
  }
  if ((it++).key() != "unit" || (it++).key() != "better") return false;
  for (const char* f : kDriftFields) {
    if (it == v.end()) return v.size() == 9;
    if ((it++).key() != f) return false;
  }
  return true;
}

// A metric's entry in a kind: its name, or [name, unit, better] where its value is a plain statistic.
Json descriptor(const std::string& name, const Json& value) {
  return is_plain_stat(value) ? Json::array({name, value["unit"], value["better"]}) : Json(name);
}

Json stat_array(const Json& s) {
  Json out = Json::array();
  for (const char* f : kStatFields) out.push_back(s[f]);
  if (s.size() == 11) {
    for (const char* f : kDriftFields) out.push_back(s[f]);
  }
  return out;
}

Json stat_object(const Json& values, const Json& desc, const std::string& at) {
  const std::size_t n = values.size();
  if (n != kStatFields.size() && n != kStatFields.size() + kDriftFields.size()) {
    throw std::invalid_argument(fmt::format("{}: a statistic of {} values (valid: 7, or 9 with drift_pct and runs)", at, n));
  }
  Json s = Json::object();
  for (std::size_t i = 0; i < kStatFields.size(); ++i) s[kStatFields[i]] = values[i];
  s["unit"] = desc[1];
  s["better"] = desc[2];
  for (std::size_t i = kStatFields.size(); i < n; ++i) s[kDriftFields[i - kStatFields.size()]] = values[i];
  return s;
}

Json signature(const Json& row) {
  Json params = Json::array(), metrics = Json::array();
  for (auto it = row["params"].begin(); it != row["params"].end(); ++it) params.push_back(it.key());
  for (auto it = row["metrics"].begin(); it != row["metrics"].end(); ++it) metrics.push_back(descriptor(it.key(), *it));
  return {{"params", params}, {"metrics", metrics}};
}

// The index of `sig` in `kinds`, added if new.
std::size_t kind_of(Json& kinds, const Json& sig) {
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i] == sig) return i;
  }
  kinds.push_back(sig);
  return kinds.size() - 1;
}

Json encoded_row(const Json& row, std::size_t kind) {
  Json out = Json::object();
  for (auto it = row.begin(); it != row.end(); ++it) {
    if (it.key() == "params" || it.key() == "metrics") {
      Json values = Json::array();
      for (const auto& v : *it) values.push_back(it.key() == "metrics" && is_plain_stat(v) ? stat_array(v) : v);
      out[it.key()] = std::move(values);
    } else {
      out[it.key()] = *it;
    }
    if (it.key() == "probe") out["kind"] = kind;
  }
  return out;
}

Json decoded_row(const Json& row, const Json& kinds, std::size_t index) {
  const std::string at = fmt::format("row {}", index);
  if (!row.is_object() || !row.contains("probe") || !row["probe"].is_string() || !row.contains("kind") ||
      !row["kind"].is_number_unsigned()) {
    throw std::invalid_argument(at + ": a version 3 row needs \"probe\" and \"kind\" (an index into kinds[probe])");
  }
  const std::string probe = row["probe"];
  const std::size_t kind = row["kind"];
  if (!kinds.contains(probe) || kind >= kinds[probe].size()) {
    throw std::invalid_argument(fmt::format("{}: kinds[\"{}\"] has no kind {}", at, probe, kind));
  }
  const Json& sig = kinds[probe][kind];
  Json out = Json::object();
  for (auto it = row.begin(); it != row.end(); ++it) {
    if (it.key() == "kind") continue;
    if (it.key() != "params" && it.key() != "metrics") {
      out[it.key()] = *it;
      continue;
    }
    const Json& names = sig[it.key()];
    if (!it->is_array() || it->size() != names.size()) {
      throw std::invalid_argument(fmt::format("{}: {} holds {} values where its kind names {}", at, it.key(),
                                              it->is_array() ? it->size() : 0, names.size()));
    }
    Json values = Json::object();
    for (std::size_t i = 0; i < names.size(); ++i) {
      const Json& desc = names[i];
      const Json& v = (*it)[i];
      if (desc.is_array()) {
        if (!v.is_array()) throw std::invalid_argument(fmt::format("{}: metric {} is not a statistic's array", at, desc[0].dump()));
        values[desc[0].get<std::string>()] = stat_object(v, desc, at);
      } else {
        values[desc.get<std::string>()] = v;
      }
    }
    out[it.key()] = std::move(values);
  }
  return out;
}

}  // namespace

Json to_columns(const Json& v2) {
  Json kinds = Json::object(), rows = Json::array();
  for (const auto& row : v2["results"]) {
    Json& of_probe = kinds[row["probe"].get<std::string>()];
    if (of_probe.is_null()) of_probe = Json::array();
    rows.push_back(encoded_row(row, kind_of(of_probe, signature(row))));
  }
  Json out = Json::object();
  for (auto it = v2.begin(); it != v2.end(); ++it) {
    if (it.key() == "schema") {
      out["schema"] = kReportSchemaV3;
    } else if (it.key() == "results") {
      out["kinds"] = std::move(kinds);
      out["results"] = std::move(rows);
    } else {
      out[it.key()] = *it;
    }
  }
  return out;
}

Json from_columns(const Json& v3) {
  if (!v3.contains("kinds") || !v3["kinds"].is_object() || !v3.contains("results") || !v3["results"].is_array()) {
    throw std::invalid_argument("a version 3 report needs a \"kinds\" object and a \"results\" array");
  }
  Json out = Json::object();
  for (auto it = v3.begin(); it != v3.end(); ++it) {
    if (it.key() == "kinds") continue;
    if (it.key() == "schema") {
      out["schema"] = kReportSchema;
    } else if (it.key() == "results") {
      Json rows = Json::array();
      for (std::size_t i = 0; i < it->size(); ++i) rows.push_back(decoded_row((*it)[i], v3["kinds"], i));
      out["results"] = std::move(rows);
    } else {
      out[it.key()] = *it;
    }
  }
  return out;
}

}  // namespace tkprobe
