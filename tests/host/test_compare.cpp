#include <gtest/gtest.h>

#include "src/compare.hpp"
#include "src/errors.hpp"
#include "tests/fixtures.hpp"

using fixtures::report;
using fixtures::timed_result;
using tkprobe::Better;
using tkprobe::Verdict;

namespace {

tkprobe::Comparison compare_one(double base, double now, double cv, Better better = Better::lower) {
  return tkprobe::compare_reports(report({timed_result("p", {{"s", 1}}, base, cv, better)}),
                                  report({timed_result("p", {{"s", 1}}, now, cv, better)}), {});
}

// Runs `tkprobe compare` on two reports written to files.
fixtures::CliRun compare_files(const tkprobe::Json& base, const tkprobe::Json& now,
                               std::vector<std::string> extra = {}) {
  const auto dir = fixtures::temp_dir("compare");
  const auto b = fixtures::write(dir / "base.json", base.dump());
  const auto n = fixtures::write(dir / "new.json", now.dump());
  std::vector<std::string> args{"compare", b.string(), n.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return fixtures::run(args);
}

}  // namespace

TEST(Compare, TenPercentSlowerFailsWithExitOne) {
  const auto c = compare_one(100, 110, 0.005);  // cycles: lower is better
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].verdict, Verdict::slower);
  EXPECT_TRUE(c.failed());
  const auto run = compare_files(report({timed_result("p", {{"s", 1}}, 100, 0.005)}),
                                 report({timed_result("p", {{"s", 1}}, 110, 0.005)}));
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.out.find("slower"), std::string::npos);
}

TEST(Compare, TenPercentFasterPasses) {
  const auto c = compare_one(100, 90, 0.005);
  EXPECT_EQ(c.rows[0].verdict, Verdict::faster);
  EXPECT_FALSE(c.failed());
  EXPECT_EQ(compare_files(report({timed_result("p", {{"s", 1}}, 100, 0.005)}),
                          report({timed_result("p", {{"s", 1}}, 90, 0.005)}))
                .code,
            0);
}

TEST(Compare, HigherIsBetterMetricsFlipTheDirection) {
  EXPECT_EQ(compare_one(100, 110, 0.005, Better::higher).rows[0].verdict, Verdict::faster);
  EXPECT_TRUE(compare_one(100, 90, 0.005, Better::higher).failed());
}

TEST(Compare, DifferenceInsideTheRecordedNoiseIsSame) {
  // cv 5% on both sides: the band is 2*sqrt(2)*5% = 14.1%, so 10% slower is noise.
  const auto c = compare_one(100, 110, 0.05);
  EXPECT_EQ(c.rows[0].verdict, Verdict::same);
  EXPECT_FALSE(c.failed());
  EXPECT_NEAR(tkprobe::noise_band_pct(0.05, 0.05), 14.142, 1e-3);
}

TEST(Compare, SlowerButUnderThresholdIsReportedNotFailed) {
  const auto c = compare_one(100, 103, 0.001);
  EXPECT_EQ(c.rows[0].verdict, Verdict::slower);
  EXPECT_FALSE(c.failed());
  EXPECT_TRUE(tkprobe::compare_reports(report({timed_result("p", {}, 100, 0.001)}),
                                       report({timed_result("p", {}, 103, 0.001)}), {2.0, false})
                  .failed());
}

TEST(Compare, MissingRowFailsAndNewRowDoesNot) {
  const auto base = report({timed_result("p", {{"s", 1}}, 100, 0.01), timed_result("p", {{"s", 2}}, 100, 0.01)});
  const auto now = report({timed_result("p", {{"s", 1}}, 100, 0.01), timed_result("p", {{"s", 3}}, 100, 0.01)});
  const auto c = tkprobe::compare_reports(base, now, {});
  ASSERT_EQ(c.rows.size(), 3u);
  EXPECT_EQ(c.rows[1].verdict, Verdict::missing);
  EXPECT_TRUE(c.rows[1].fails);
  EXPECT_EQ(c.rows[2].verdict, Verdict::added);
  EXPECT_FALSE(c.rows[2].fails);
  EXPECT_EQ(compare_files(base, now).code, 1);
}

TEST(Compare, ParamOrderDoesNotMatter) {
  const auto c = tkprobe::compare_reports(report({timed_result("p", {{"a", 1}, {"b", 2}}, 100, 0.01)}),
                                          report({timed_result("p", {{"b", 2}, {"a", 1}}, 100, 0.01)}), {});
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].verdict, Verdict::same);
}

TEST(Compare, FailedResultFails) {
  auto failing = timed_result("p", {}, 100, 0.01);
  failing.checked({{"what", "x"}}, false);
  EXPECT_TRUE(tkprobe::compare_reports(report({timed_result("p", {}, 100, 0.01)}), report({failing}), {}).failed());
}

TEST(Compare, DifferentGpusAreRefusedUnlessAllowed) {
  const auto h200 = report({timed_result("p", {}, 100, 0.01)}, "NVIDIA H200");
  const auto h100 = report({timed_result("p", {}, 100, 0.01)}, "NVIDIA H100 80GB HBM3");
  EXPECT_THROW(tkprobe::compare_reports(h200, h100, {}), tkprobe::UsageError);
  EXPECT_NO_THROW(tkprobe::compare_reports(h200, h100, {5.0, true}));
  const auto refused = compare_files(h200, h100);
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("--allow-device-mismatch"), std::string::npos);
  EXPECT_EQ(compare_files(h200, h100, {"--allow-device-mismatch"}).code, 0);
}

TEST(Compare, NotAReportOrOtherSchemaExitsTwo) {
  const auto dir = fixtures::temp_dir("compare-bad");
  const auto good = fixtures::write(dir / "good.json", report({timed_result("p", {}, 1, 0)}).dump());
  const auto text = fixtures::write(dir / "text.json", "hello");
  const auto v2 = fixtures::write(dir / "v2.json", R"({"schema": "tkprobe.report/2", "results": []})");
  const auto a = fixtures::run({"compare", good.string(), text.string()});
  EXPECT_EQ(a.code, 2);
  EXPECT_NE(a.err.find("not JSON"), std::string::npos) << a.err;
  const auto b = fixtures::run({"compare", v2.string(), good.string()});
  EXPECT_EQ(b.code, 2);
  EXPECT_NE(b.err.find("valid: 'tkprobe.report/1'"), std::string::npos) << b.err;
}

TEST(Compare, MarkdownTableHasOneLinePerRow) {
  const auto c = compare_one(100, 110, 0.005);
  const std::string md = tkprobe::to_markdown(c);
  EXPECT_NE(md.find("| probe | params | metric |"), std::string::npos);
  EXPECT_NE(md.find("| p | s=1 | cycles |"), std::string::npos) << md;
  EXPECT_NE(md.find("**FAIL**"), std::string::npos);
}
