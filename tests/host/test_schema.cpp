#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "src/probe.hpp"
#include "src/report.hpp"
#include "src/report_set.hpp"
#include "src/schema.hpp"

using tkprobe::Json;
using tkprobe::validate_schema;

static Json load(const std::string& relative) {
  std::ifstream in(std::string(TKPROBE_SOURCE_DIR) + "/" + relative);
  if (!in) throw std::runtime_error("missing " + relative);
  return Json::parse(in);
}

TEST(Schema, ValidatorCatchesEachKindOfViolation) {
  const Json schema = Json::parse(R"({
    "type": "object", "required": ["a", "b"], "additionalProperties": false,
    "properties": {
      "a": {"enum": ["x", "y"]},
      "b": {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": 2},
      "c": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/n"}]}
    },
    "$defs": {"n": {"type": "number", "maximum": 1}}
  })");
  EXPECT_TRUE(validate_schema(schema, Json::parse(R"({"a": "x", "b": [1], "c": 0.5})")).empty());
  EXPECT_EQ(validate_schema(schema, Json::parse(R"({"a": "z", "b": [1]})")).size(), 1u);
  EXPECT_EQ(validate_schema(schema, Json::parse(R"({"b": [1]})")).size(), 1u);
  EXPECT_EQ(validate_schema(schema, Json::parse(R"({"a": "x", "b": [-1, 1, 2]})")).size(), 2u);
  EXPECT_EQ(validate_schema(schema, Json::parse(R"({"a": "x", "b": [], "c": 5})")).size(), 1u);
  EXPECT_EQ(validate_schema(schema, Json::parse(R"({"a": "x", "b": [], "extra": 1})")).size(), 1u);
}

TEST(Schema, UnsupportedKeywordIsRefusedNotIgnored) {
  EXPECT_THROW(validate_schema(Json::parse(R"({"pattern": "^a"})"), Json("a")), std::invalid_argument);
}

// Every committed H200 report is a real report: each must match the schema.
TEST(Schema, CommittedH200ReportsConform) {
  const Json schema = load("results/report.schema.json");
  int files = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(TKPROBE_SOURCE_DIR) + "/results/h200")) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const std::string name = entry.path().string();
    const Json report = tkprobe::read_report(entry.path());  // version 3 files as the document they encode
    const auto errors = validate_schema(schema, report);
    EXPECT_TRUE(errors.empty()) << name << ": " << errors.front();
    EXPECT_EQ(report["device"]["name"], "NVIDIA H200") << name;
    EXPECT_FALSE(report["results"].empty()) << name;
  }
  EXPECT_GE(files, 4) << "suite.json, claims.json and the peers' two records (archive/)";
}

// Issue 17's sizes: the committed reports (every *.json under results/h200; the plots are pictures,
// not reports) under 400 KB together, the suite baseline, what `tkprobe all` writes, under 300 KB
// (250 KB held 588 rows; the decode, varlen, D = 256 and e4m3 rows make 645, 276 KB a run).
TEST(Schema, CommittedH200ReportsFitTheirSizes) {
  constexpr std::uintmax_t kAllBytes = 400 * 1000, kSuiteBytes = 300 * 1000;
  const std::filesystem::path root = std::string(TKPROBE_SOURCE_DIR) + "/results/h200";
  std::vector<std::pair<std::uintmax_t, std::string>> files;
  std::uintmax_t total = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".json") continue;
    files.emplace_back(entry.file_size(), std::filesystem::relative(entry.path(), root).string());
    total += files.back().first;
  }
  std::sort(files.rbegin(), files.rend());
  std::string sizes;
  for (const auto& [bytes, name] : files) sizes += fmt::format("\n  {:>8.1f} KB  results/h200/{}", bytes / 1000.0, name);
  EXPECT_LE(total, kAllBytes) << fmt::format("the reports in results/h200 hold {:.1f} KB, over {} KB:", total / 1000.0,
                                             kAllBytes / 1000) << sizes;
  const auto suite = std::filesystem::file_size(root / "suite.json");
  EXPECT_LE(suite, kSuiteBytes) << fmt::format("results/h200/suite.json is {:.1f} KB, over {} KB (what `tkprobe all` "
                                               "writes):", suite / 1000.0, kSuiteBytes / 1000) << sizes;
}

// The suite baseline is what `tkprobe all` runs on one GPU: every registered probe has rows in it
// but those that span devices (p2p, run by `all` only where --devices selects two or more GPUs),
// nothing else does, and it is a baseline of several runs (each judged row carries its drift).
// A probe not yet in the committed baseline says so in its folder: "awaiting_baseline" in its
// metrics.json, with the reason; the next baseline must hold it, and then the key goes.
std::set<std::string> awaiting_baseline() {
  std::set<std::string> awaiting;
  for (const auto& p : tkprobe::make_probes()) {
    std::ifstream in(std::filesystem::path(TKPROBE_SOURCE_DIR) / "probes" / p->name() / "metrics.json");
    if (in && Json::parse(in).contains("awaiting_baseline")) awaiting.insert(p->name());
  }
  return awaiting;
}

TEST(Schema, SuiteBaselineCoversEveryProbe) {
  const Json suite = tkprobe::read_report(std::string(TKPROBE_SOURCE_DIR) + "/results/h200/suite.json");
  EXPECT_TRUE(tkprobe::report_problems(suite).empty()) << tkprobe::report_problems(suite).front();
  std::set<std::string> expected, in_baseline;  // expected: what `tkprobe all` runs on one GPU, awaiting ones aside
  const auto awaiting = awaiting_baseline();
  for (const auto& p : tkprobe::make_probes())
    if (tkprobe::in_suite(*p, 1) && !awaiting.count(p->name())) expected.insert(p->name());
  for (const auto& r : suite["results"]) in_baseline.insert(r["probe"].get<std::string>());
  for (const auto& name : awaiting) {
    EXPECT_FALSE(in_baseline.count(name))
        << name << " is in the baseline now: take awaiting_baseline off probes/" << name << "/metrics.json";
  }
  EXPECT_EQ(in_baseline, expected);
  EXPECT_EQ(suite["tool"]["probes"], Json(expected)) << "a run of one device: the probes the suite ran then";
  ASSERT_TRUE(suite["tool"].contains("baseline"));
  EXPECT_GE(suite["tool"]["baseline"]["runs"].size(), 3u);
  int with_drift = 0;
  for (const auto& r : suite["results"]) {
    if (r["status"] == "ok" && r.contains("primary")) with_drift += r["metrics"][r["primary"].get<std::string>()].contains("drift_pct");
  }
  EXPECT_GT(with_drift, 300);
}
