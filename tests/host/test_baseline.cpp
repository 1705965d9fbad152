#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/baseline.hpp"
#include "src/compare.hpp"
#include "src/errors.hpp"
#include "tests/fixtures.hpp"

using fixtures::report;
using fixtures::report_set;
using fixtures::timed_result;
using tkprobe::Json;

namespace {

// One run of a two-row suite: row a's median and row b's.
tkprobe::ReportSet run(double a, double b, const std::string& started) {
  auto j = report({timed_result("p", {{"row", "a"}}, a, 0.001), timed_result("p", {{"row", "b"}}, b, 0.001)});
  j["tool"]["started_at"] = started;
  return report_set(j, started);
}

}  // namespace

TEST(Baseline, KeepsTheRunAtTheMedianAndRecordsTheDrift) {
  const Json b = tkprobe::make_baseline({run(100, 50, "r1"), run(104, 51, "r2"), run(102, 52, "r3")});
  EXPECT_EQ(b["tool"]["baseline"]["kept"], 1) << "r3 holds a's median (102), r2 b's (51): the tie goes to the earlier";
  // Whichever run is kept, each row records the spread of all three, of the smallest (so every run lies
  // within it of every other; written to 6 significant digits).
  const auto& a = b["results"][0]["metrics"]["cycles"];
  EXPECT_NEAR(a["drift_pct"].get<double>(), 100.0 * 4 / 100, 1e-5);
  EXPECT_EQ(a["runs"], 3);
  EXPECT_NEAR(b["results"][1]["metrics"]["cycles"]["drift_pct"].get<double>(), 100.0 * 2 / 50, 1e-5);
  EXPECT_TRUE(tkprobe::report_problems(b).empty()) << tkprobe::report_problems(b).front();
}

// tma-reduce's own-tile rows on the H200 (180acf5): 2.90, 2.69, 2.91 TB/s over three runs, 8% apart.
// A row whose runs drift past the largest band compare gives (7% at the 5% threshold) is named: a run at
// the low end fails against a baseline kept at the high end.
TEST(Baseline, RowsThatDriftedPastTheThresholdAreNamed) {
  const Json b = tkprobe::make_baseline({run(290, 50, "r1"), run(269, 51, "r2"), run(291, 50, "r3")});
  const auto unsteady = tkprobe::unsteady_rows(b, 5.0);
  ASSERT_EQ(unsteady.size(), 1u);
  EXPECT_EQ((*unsteady.front())["params"]["row"], "a");
  EXPECT_TRUE(tkprobe::unsteady_rows(b, 6.0).empty()) << "8.2% is inside the 8.4% band of a 6% threshold";
}

TEST(Baseline, TheRecordedDriftBecomesCompareBand) {
  const Json b = tkprobe::make_baseline({run(100, 50, "r1"), run(102, 50, "r2"), run(101, 50, "r3")});
  // Kept: r1 (b's median, 50, is first found there), so a's base is 100.
  const auto within =
      report({timed_result("p", {{"row", "a"}}, 101.5, 0.001), timed_result("p", {{"row", "b"}}, 50, 0.001)});
  const auto c = tkprobe::compare_reports(report_set(b), report_set(within), {});
  EXPECT_NEAR(c.rows[0].band_pct, 100.0 * 2 / 100, 1e-5);
  EXPECT_EQ(c.rows[0].verdict, tkprobe::Verdict::same) << "+1.5% against a 2% drift";
  EXPECT_EQ(b["tool"]["baseline"]["kept"], 0);
  EXPECT_DOUBLE_EQ(c.rows[1].band_pct, tkprobe::kMinBandPct) << "no drift at all: the floor";
}

// Per clock drifted 12% and per second 4% over three H200 runs (attention N=1024 causal): judged per
// second. A row whose two figures drift alike stays per clock, as it would be judged by chance otherwise.
TEST(Baseline, JudgesPerSecondOnlyWhereThatHeldFarSteadier) {
  auto runs_of = [](std::vector<std::pair<double, double>> figures) {
    std::vector<tkprobe::ReportSet> out;
    for (const auto& [pct, tflops] : figures) out.push_back(report_set(report({fixtures::clocked_result(pct, tflops)})));
    return out;
  };
  const Json memory_bound = tkprobe::make_baseline(runs_of({{45.5372, 364.4}, {46.9383, 361.0}, {41.5531, 376.5}}));
  EXPECT_EQ(memory_bound["results"][0]["primary"], "tflops");
  EXPECT_NEAR(memory_bound["results"][0]["metrics"]["tflops"]["drift_pct"].get<double>(), 100 * (376.5 / 361.0 - 1), 1e-3);
  const Json clock_bound = tkprobe::make_baseline(runs_of({{60.72, 565.8}, {61.15, 570.3}, {61.18, 569.0}}));
  EXPECT_EQ(clock_bound["results"][0]["primary"], "pct_clock_peak");
  EXPECT_TRUE(tkprobe::report_problems(memory_bound).empty());
}

// Both readings keep their drift; a row whose per-clock reading drifted past the widest band is judged
// by the reading that loses less (test_compare.cpp), which a power state cannot move both ways, so it
// is not named unsteady; a row without a twin is (RowsThatDriftedPastTheThresholdAreNamed).
TEST(Baseline, RecordsBothReadingsDriftAndNamesOnlyRowsNoReadingHolds) {
  std::vector<tkprobe::ReportSet> runs;
  for (const auto& [pct, tflops] : std::vector<std::pair<double, double>>{{42.744, 374.256}, {43.088, 377.248}, {47.801, 346.76}})
    runs.push_back(report_set(report({fixtures::clocked_result(pct, tflops)})));
  const Json b = tkprobe::make_baseline(runs);
  const Json& m = b["results"][0]["metrics"];
  EXPECT_EQ(b["results"][0]["primary"], "pct_clock_peak");
  EXPECT_NEAR(m["pct_clock_peak"]["drift_pct"].get<double>(), 100 * (47.801 / 42.744 - 1), 1e-3);
  EXPECT_NEAR(m["tflops"]["drift_pct"].get<double>(), 100 * (377.248 / 346.76 - 1), 1e-3);
  EXPECT_TRUE(tkprobe::unsteady_rows(b, 5.0).empty());
  EXPECT_TRUE(tkprobe::report_problems(b).empty());
}

TEST(Baseline, RefusesRunsOfDifferentSuitesOrGpusOrTooFew) {
  EXPECT_THROW(tkprobe::make_baseline({run(1, 1, "r1")}), tkprobe::UsageError);
  auto other = report({timed_result("p", {{"row", "a"}}, 1, 0.001), timed_result("p", {{"row", "c"}}, 1, 0.001)});
  EXPECT_THROW(tkprobe::make_baseline({run(1, 1, "r1"), report_set(other)}), tkprobe::UsageError);
  auto h100 = report({timed_result("p", {{"row", "a"}}, 1, 0.001), timed_result("p", {{"row", "b"}}, 1, 0.001)},
                     "NVIDIA H100");
  EXPECT_THROW(tkprobe::make_baseline({run(1, 1, "r1"), report_set(h100)}), tkprobe::UsageError);
}

TEST(Baseline, CommandWritesTheFileOrNothing) {
  const auto dir = fixtures::temp_dir("baseline");
  std::vector<std::string> args{"baseline", "--out", (dir / "base.json").string()};
  for (int i = 0; i < 3; ++i) {
    args.push_back(fixtures::write(dir / fmt::format("run{}.json", i), run(100 + i, 50, "r").report.dump()).string());
  }
  const auto ok = fixtures::run(args);
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(tkprobe::read_report(dir / "base.json")["results"].size(), 2u);
  const auto bad_folder = fixtures::run({"baseline", "--out", (dir / "no" / "b.json").string(), args[3], args[4]});
  EXPECT_EQ(bad_folder.code, 2);
  EXPECT_TRUE(bad_folder.err.find("--out") != std::string::npos) << bad_folder.err;
}
