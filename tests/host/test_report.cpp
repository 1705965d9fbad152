#include <gtest/gtest.h>

#include <fstream>

#include "src/errors.hpp"
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
    tkprobe::read_report(fixtures::write(dir / "c.json", R"({"schema": "tkprobe.report/2", "results": []})"));
    FAIL() << "another schema version was accepted";
  } catch (const tkprobe::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("tkprobe.report/1"), std::string::npos) << "names the valid version";
  }
}

TEST(Report, TargetInMissingFolderIsRefused) {
  EXPECT_THROW(tkprobe::require_writable_target("/nonexistent-folder/r.json"), tkprobe::UsageError);
  EXPECT_NO_THROW(tkprobe::require_writable_target(fixtures::temp_dir("target") / "r.json"));
}
