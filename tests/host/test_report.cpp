#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "src/errors.hpp"
#include "src/report.hpp"
#include "src/report_columns.hpp"
#include "src/schema.hpp"
#include "tests/fixtures.hpp"

using tkprobe::Json;

static Json report_schema() {
  std::ifstream in(std::string(TKPROBE_SOURCE_DIR) + "/results/report.schema.json");
  return Json::parse(in);
}

TEST(Report, ResultCarriesStatsAndPrimaryMetric) {
  const auto r = fixtures::timed_result("p", {{"k", 1}}, 30, 0.01);
  EXPECT_EQ(r.primary, "cycles");
  EXPECT_EQ(r.metrics["cycles"]["median"], 30);
  EXPECT_EQ(r.metrics["cycles"]["better"], "lower");
  EXPECT_EQ(r.status, tkprobe::Status::ok);
}

TEST(Report, FailingCheckFailsTheResult) {
  auto r = fixtures::timed_result("p", {}, 30, 0.01);
  r.checked({{"what", "x"}}, false);
  EXPECT_EQ(r.status, tkprobe::Status::failed);
  EXPECT_EQ(r.check["passed"], false);
}

TEST(Report, ConstructedReportMatchesTheSchema) {
  auto bad = fixtures::timed_result("p", {{"stride", 2}}, 30, 0.01);
  bad.checked({{"what", "x"}}, false);
  const Json j = fixtures::report({fixtures::timed_result("p", {{"stride", 1}}, 30, 0.01), bad});
  const auto errors = tkprobe::validate_schema(report_schema(), j);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

// Each probe that ran says how long it took, in its telemetry section; one whose rows took no NVML
// readings gets a section of its own for it.
TEST(Report, EachProbesWallTimeIsInItsTelemetry) {
  auto read = fixtures::timed_result("p", {{"stride", 1}}, 30, 0.01);
  read.telemetry = {{"sm_clock_mhz", {1980.0, 1980.0}}};
  const Json j =
      fixtures::report({read, fixtures::timed_result("q", {}, 3, 0.01)}, "NVIDIA H200", {{"p", 12.345}, {"q", 0.26}});
  EXPECT_EQ(j["telemetry"]["p"]["seconds"], 12.3);
  EXPECT_EQ(j["telemetry"]["p"]["rows"], 1) << "the rows' readings stay beside it";
  EXPECT_EQ(j["telemetry"]["q"], Json({{"rows", 0}, {"throttled_rows", 0}, {"seconds", 0.3}}));
  const auto errors = tkprobe::validate_schema(report_schema(), j);
  EXPECT_TRUE(errors.empty()) << errors.front();
  const auto dir = fixtures::temp_dir("seconds");
  tkprobe::write_file_atomic(dir / "r.json", tkprobe::report_text(j));
  EXPECT_EQ(tkprobe::read_report(dir / "r.json")["telemetry"], j["telemetry"]);
}

TEST(Report, WriteThenReadRoundTrips) {
  const auto dir = fixtures::temp_dir("roundtrip");
  const Json j = fixtures::report({fixtures::timed_result("p", {{"stride", 1}}, 30, 0.01)});
  tkprobe::write_file_atomic(dir / "r.json", j.dump(2));
  EXPECT_EQ(tkprobe::read_report(dir / "r.json"), j);
  // Nothing but the report is left in the folder (no temporary file).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);
}

TEST(Report, ReadRejectsWhatIsNotAReport) {
  const auto dir = fixtures::temp_dir("notreport");
  EXPECT_THROW(tkprobe::read_report(dir / "missing.json"), tkprobe::UsageError);
  EXPECT_THROW(tkprobe::read_report(fixtures::write(dir / "a.json", "not json")), tkprobe::UsageError);
  EXPECT_THROW(tkprobe::read_report(fixtures::write(dir / "b.json", R"({"results": []})")), tkprobe::UsageError);
  try {
    tkprobe::read_report(fixtures::write(dir / "c.json", R"({"schema": "tkprobe.report/4", "results": []})"));
    FAIL() << "another schema version was accepted";
  } catch (const tkprobe::UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'tkprobe.report/3', 'tkprobe.report/2', 'tkprobe.report/1'"), std::string::npos) << "names the valid versions";
  }
}

// ---- schema version 2 ----

namespace {

// Version 1 as the H200 wrote it: rows cut whole from the per-probe reports and compare_sdpa.py's
// record that results/h200/archive held in version 1 (tests/host/data/cut_v1.py), in name order.
std::vector<Json> archived_v1_reports() {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TKPROBE_SOURCE_DIR) + "/tests/host/data/v1")) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<Json> out;
  for (const auto& path : paths) out.push_back(Json::parse(std::ifstream(path)));
  return out;
}

// Every number of `a` within 5e-6 relative of `b`'s (6 significant digits), everything else equal.
void expect_same_within_rounding(const Json& a, const Json& b, const std::string& at) {
  if (a.is_number_float() || b.is_number_float()) {
    ASSERT_TRUE(a.is_number() && b.is_number()) << at;
    EXPECT_NEAR(a.get<double>(), b.get<double>(), 5e-6 * std::abs(b.get<double>())) << at;
  } else if (a.is_structured()) {
    ASSERT_EQ(a.type(), b.type()) << at;
    ASSERT_EQ(a.size(), b.size()) << at << ": " << a.dump().substr(0, 200);
    if (a.is_object()) {
      for (auto it = a.begin(); it != a.end(); ++it) {
        ASSERT_TRUE(b.contains(it.key())) << at << "/" << it.key();
        expect_same_within_rounding(*it, b[it.key()], at + "/" + it.key());
      }
    } else {
      for (std::size_t i = 0; i < a.size(); ++i) expect_same_within_rounding(a[i], b[i], at + "/" + std::to_string(i));
    }
  } else {
    EXPECT_EQ(a, b) << at;
  }
}

void expect_v2_keeps_everything(const Json& v1) {
  ASSERT_EQ(v1["schema"], "tkprobe.report/1") << "the fixture is version 1";
  const auto dir = fixtures::temp_dir("v2");
  tkprobe::write_file_atomic(dir / "v2.json", tkprobe::report_text(tkprobe::compact_report(v1)));
  const Json v2 = tkprobe::read_report(dir / "v2.json");  // what compare and baseline see
  EXPECT_EQ(v2["schema"], "tkprobe.report/2");
  ASSERT_EQ(v2["results"].size(), v1["results"].size());
  for (std::size_t i = 0; i < v1["results"].size(); ++i) {
    const Json &old_row = v1["results"][i], &new_row = v2["results"][i];
    const std::string at = "row " + std::to_string(i);
    for (const char* field : {"probe", "params", "status", "reason", "primary", "peer", "check", "metrics"}) {
      ASSERT_EQ(old_row.contains(field), new_row.contains(field)) << at << " " << field;
      if (old_row.contains(field)) expect_same_within_rounding(new_row[field], old_row[field], at + "/" + field);
    }
    const Json &t1 = old_row.value("telemetry", Json::object()), &t2 = new_row.value("telemetry", Json::object());
    EXPECT_EQ(t2.value("kernel_sm_clock_mhz", 0.0) == 0, t1.value("kernel_sm_clock_mhz", 0.0) == 0) << at;
    EXPECT_EQ(t2.value("throttled", false), t1.value("throttled", false)) << at;
    if (t1.value("throttled", false)) {
      EXPECT_EQ(t2["reasons"], t1["reasons"]) << at;
    }
  }
  EXPECT_EQ(v2["findings"], v1["findings"]);
}

void expect_nvml_once_per_probe(const Json& v1) {
  const Json v2 = tkprobe::compact_report(v1);
  std::map<std::string, int> rows, throttled;
  std::map<std::string, std::pair<double, double>> power;
  for (const auto& r : v1["results"]) {
    if (!r.contains("telemetry")) continue;
    const std::string probe = r["probe"];
    ++rows[probe];
    throttled[probe] += r["telemetry"].value("throttled", false);
    if (!r["telemetry"].contains("power_w")) continue;
    auto [it, fresh] = power.try_emplace(probe, r["telemetry"]["power_w"][0], r["telemetry"]["power_w"][1]);
    it->second = {std::min(it->second.first, r["telemetry"]["power_w"][0].get<double>()),
                  std::max(it->second.second, r["telemetry"]["power_w"][1].get<double>())};
  }
  ASSERT_EQ(v2["telemetry"].size(), rows.size());
  for (const auto& [probe, n] : rows) {
    const Json& t = v2["telemetry"][probe];
    EXPECT_EQ(t["rows"], n) << probe;
    EXPECT_EQ(t["throttled_rows"], throttled[probe]) << probe;
    if (power.contains(probe)) {
      EXPECT_NEAR(t["power_w"][0].get<double>(), power[probe].first, 5e-6 * power[probe].first) << probe;
      EXPECT_NEAR(t["power_w"][1].get<double>(), power[probe].second, 5e-6 * power[probe].second) << probe;
    }
  }
  for (const auto& r : v2["results"]) EXPECT_FALSE(r.value("telemetry", Json::object()).contains("power_w"));
}

}  // namespace

TEST(ReportV2, AVersionOneReportKeepsEveryRowAndMetric) {
  const auto reports = archived_v1_reports();
  ASSERT_EQ(reports.size(), 15u);
  for (const Json& v1 : reports) expect_v2_keeps_everything(v1);
}

TEST(ReportV2, NvmlReadingsAreGatheredOncePerProbe) {
  for (const Json& v1 : archived_v1_reports()) expect_nvml_once_per_probe(v1);
}

TEST(ReportV2, CompactingTwiceChangesNothingAndTheTextParsesBack) {
  for (const Json& v1 : archived_v1_reports()) {
    const Json once = tkprobe::compact_report(v1);
    EXPECT_EQ(tkprobe::compact_report(once), once);
    EXPECT_EQ(tkprobe::from_columns(Json::parse(tkprobe::report_text(once))), once);
    const auto errors = tkprobe::validate_schema(report_schema(), once);
    EXPECT_TRUE(errors.empty()) << errors.front();
  }
}


TEST(ReportV2, RepeatedCheckTextsAreWrittenOnceAndReadBack) {
  auto a = fixtures::timed_result("p", {{"stride", 1}}, 30, 0.01), b = fixtures::timed_result("p", {{"stride", 2}}, 31, 0.01);
  auto c = fixtures::timed_result("p", {{"stride", 3}}, 32, 0.01);
  a.checked({{"what", "same words"}}, true);
  b.checked({{"what", "same words"}}, true);
  c.checked({{"what", "other words"}}, true);
  const Json v2 = fixtures::report({a, b, c});  // to_json writes version 2
  EXPECT_TRUE(v2["results"][0]["check"].contains("what"));
  EXPECT_FALSE(v2["results"][1]["check"].contains("what"));
  EXPECT_EQ(v2["results"][2]["check"]["what"], "other words");
  const auto dir = fixtures::temp_dir("v2what");
  tkprobe::write_file_atomic(dir / "r.json", tkprobe::report_text(v2));
  EXPECT_EQ(tkprobe::read_report(dir / "r.json")["results"][1]["check"]["what"], "same words");
}

TEST(Report, TargetInMissingFolderIsRefused) {
  EXPECT_THROW(tkprobe::require_writable_target("/nonexistent-folder/r.json"), tkprobe::UsageError);
  EXPECT_NO_THROW(tkprobe::require_writable_target(fixtures::temp_dir("target") / "r.json"));
}

// Version 3 is version 2 in columns: every version 1 fixture, compacted to version 2 and written,
// reads back equal, key for key; the suite baseline, a version 3 file, back and forth likewise.
TEST(ReportV3, WritingInColumnsLosesNothing) {
  const auto dir = fixtures::temp_dir("report-v3");
  for (const Json& v1 : archived_v1_reports()) {
    const Json v2 = tkprobe::compact_report(v1);
    EXPECT_EQ(tkprobe::from_columns(tkprobe::to_columns(v2)), v2);
    tkprobe::write_file_atomic(dir / "v3.json", tkprobe::report_text(v2));
    EXPECT_EQ(Json::parse(std::ifstream(dir / "v3.json"))["schema"], "tkprobe.report/3");
    Json expected = v2;
    tkprobe::restore_check_texts(expected);  // as read_report gives a version 2 file back
    EXPECT_EQ(tkprobe::read_report(dir / "v3.json"), expected) << v1["tool"].dump();
  }
  const Json suite = tkprobe::read_report(std::string(TKPROBE_SOURCE_DIR) + "/results/h200/suite.json");
  EXPECT_EQ(suite["schema"], "tkprobe.report/2");
  const Json written = Json::parse(tkprobe::report_text(tkprobe::compact_report(suite)));
  EXPECT_EQ(tkprobe::compact_report(tkprobe::from_columns(written)), tkprobe::compact_report(suite));
}

// What `tkprobe <probe> --json -` writes (the text a file holds, version 3) reads back through
// parse_report as the file would: `tkprobe claims` reads its probe runs so (it once parsed them as
// plain JSON and indexed the column-encoded rows as objects: type_error.305 on the H200).
TEST(ReportV3, TheTextOfAReportParsesAsTheFileReads) {
  const auto dir = fixtures::temp_dir("report-text");
  const Json v2 = tkprobe::compact_report(archived_v1_reports().front());
  const std::string text = tkprobe::report_text(v2);
  tkprobe::write_file_atomic(dir / "r.json", text);
  const Json parsed = tkprobe::parse_report(text, "a probe's stdout");
  EXPECT_EQ(parsed, tkprobe::read_report(dir / "r.json"));
  EXPECT_TRUE(parsed["results"].front()["params"].is_object()) << "rows decoded from their columns";
  EXPECT_THROW(tkprobe::parse_report("{}", "a probe's stdout"), tkprobe::UsageError);
}

// A version 3 file whose rows do not match their kinds is a usage error naming the file and row.
TEST(ReportV3, ARowThatDoesNotMatchItsKindIsRefused) {
  const Json v2 = tkprobe::compact_report(archived_v1_reports().front());
  const auto dir = fixtures::temp_dir("report-v3-bad");
  auto refused = [&](const std::function<void(Json&)>& spoil, const std::string& says) {
    Json v3 = tkprobe::to_columns(v2);
    spoil(v3);
    const auto path = fixtures::write(dir / "bad.json", v3.dump());
    try {
      tkprobe::read_report(path);
      ADD_FAILURE() << "accepted: " << says;
    } catch (const tkprobe::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    }
  };
  refused([](Json& d) { d["results"][0]["params"].push_back(1); }, "row 0: params holds");
  refused([](Json& d) { d["results"][1]["kind"] = 99; }, "row 1: kinds[");
  refused([](Json& d) { d["results"][0].erase("kind"); }, "row 0: a version 3 row needs");
  refused([](Json& d) { d.erase("kinds"); }, "needs a \"kinds\" object");
}

namespace {

// The message read_report refuses `text` with, written to a file; empty where it reads it.
std::string refusal(const std::string& text) {
  const auto path = fixtures::write(fixtures::temp_dir("report-refused") / "bad.json", text);
  try {
    tkprobe::read_report(path);
  } catch (const tkprobe::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// A version 3 file is checked as the version 2 document it encodes; what is wrong with it is told
// of the version the file declares (a file without a device once read "{"schema":"tkprobe.report/2",...").
TEST(ReportV3, EveryMessageNamesTheVersionTheFileDeclares) {
  const Json v3 = tkprobe::to_columns(fixtures::report({fixtures::timed_result("p", {{"s", 1}}, 30, 0.01)}));
  const std::vector<std::function<void(Json&)>> spoilers = {
      [](Json& d) { d.erase("device"); },
      [](Json& d) { d.erase("tool"); },
      [](Json& d) { d["results"][0]["status"] = 7; },
      [](Json& d) { d["extra"] = 1; },
      [](Json& d) { d.erase("kinds"); },
      [](Json& d) { d["results"][0]["kind"] = 5; },
      [](Json& d) { d["kinds"]["p"] = "not a kind"; },  // a JSON type from_columns cannot index
  };
  for (std::size_t i = 0; i < spoilers.size(); ++i) {
    Json bad = v3;
    spoilers[i](bad);
    const std::string what = refusal(bad.dump());
    EXPECT_NE(what.find("bad.json (tkprobe.report/3): "), std::string::npos) << "case " << i << ": " << what;
    EXPECT_EQ(what.find("tkprobe.report/2"), std::string::npos) << "case " << i << ": " << what;
  }
}

TEST(Report, AFileThatDeclaresNoVersionIsToldTheValidOnes) {
  for (const char* text : {"not json", R"({"results": []})", R"({"schema": 3})"}) {
    const std::string what = refusal(text);
    EXPECT_NE(what.find("(valid: 'tkprobe.report/3', 'tkprobe.report/2', 'tkprobe.report/1')"), std::string::npos)
        << what;
  }
}
