#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "src/compare.hpp"
#include "src/compare_output.hpp"
#include "src/errors.hpp"
#include "tests/fixtures.hpp"

using fixtures::report;
using fixtures::report_set;
using fixtures::clocked_result;
using fixtures::timed_result;
using tkprobe::Better;
using tkprobe::Json;
using tkprobe::Verdict;

namespace {

tkprobe::Comparison compare_json(const Json& base, const Json& now, tkprobe::CompareOptions o = {}) {
  return tkprobe::compare_reports(report_set(base), report_set(now), o);
}

tkprobe::Comparison compare_one(double base, double now, double cv, Better better = Better::lower) {
  return compare_json(report({timed_result("p", {{"s", 1}}, base, cv, better)}),
                      report({timed_result("p", {{"s", 1}}, now, cv, better)}));
}

// Runs `tkprobe compare` on two reports written to files.
fixtures::CliRun compare_files(const Json& base, const Json& now, std::vector<std::string> extra = {}) {
  const auto dir = fixtures::temp_dir("compare");
  const auto b = fixtures::write(dir / "base.json", base.dump());
  const auto n = fixtures::write(dir / "new.json", now.dump());
  std::vector<std::string> args{"compare", b.string(), n.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return fixtures::run(args);
}

// `tkprobe compare` with a base report and a new report given as text (possibly malformed).
fixtures::CliRun compare_text(const std::string& base, const std::string& now) {
  const auto dir = fixtures::temp_dir("compare-text");
  return fixtures::run({"compare", fixtures::write(dir / "base.json", base).string(),
                        fixtures::write(dir / "new.json", now).string()});
}

bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

TEST(Compare, TenPercentSlowerFailsWithExitOne) {
  const auto c = compare_one(100, 110, 0.005);  // cycles: lower is better
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].verdict, Verdict::slower);
  EXPECT_NEAR(c.rows[0].loss_pct, 10, 1e-9);
  EXPECT_TRUE(c.failed());
  const auto run = compare_files(report({timed_result("p", {{"s", 1}}, 100, 0.005)}),
                                 report({timed_result("p", {{"s", 1}}, 110, 0.005)}));
  EXPECT_EQ(run.code, 1);
  EXPECT_TRUE(mentions(run.out, "slower"));
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

TEST(Compare, DifferenceInsideTheBaselinesBandIsSame) {
  // cv 1%: the band is 2*sqrt(2)*1% = 2.83%, so 2% slower is noise and 4% is not.
  EXPECT_EQ(compare_one(100, 102, 0.01).rows[0].verdict, Verdict::same);
  EXPECT_NEAR(compare_one(100, 102, 0.01).rows[0].band_pct, 2.828, 1e-3);
  EXPECT_EQ(compare_one(100, 104, 0.01).rows[0].verdict, Verdict::slower);
  EXPECT_FALSE(compare_one(100, 104, 0.01).failed());
}

TEST(Compare, BandIsCappedAtTheThresholdSoANoisyBaselineCannotHideAnEightPercentLoss) {
  const auto c = compare_one(100, 108, 0.05);  // cv 5%: 14% uncapped
  EXPECT_DOUBLE_EQ(c.rows[0].band_pct, 5.0);
  EXPECT_TRUE(c.failed());
}

TEST(Compare, NewReportCannotWidenItsOwnBand) {
  // The new report claims cv 5 (500%); the band comes from the baseline alone.
  const auto c = compare_json(report({timed_result("p", {}, 100, 0.001)}), report({timed_result("p", {}, 150, 5)}));
  EXPECT_DOUBLE_EQ(c.rows[0].band_pct, tkprobe::kMinBandPct);
  EXPECT_EQ(c.rows[0].verdict, Verdict::slower);
  EXPECT_TRUE(c.failed());
}

TEST(Compare, RecordedDriftIsTheBand) {
  auto base = report({timed_result("p", {}, 100, 0.0001)});
  base["results"][0]["metrics"]["cycles"]["drift_pct"] = 2.5;
  base["results"][0]["metrics"]["cycles"]["runs"] = 3;
  const auto c = compare_json(base, report({timed_result("p", {}, 102, 0.0001)}));
  EXPECT_DOUBLE_EQ(c.rows[0].band_pct, 2.5);
  EXPECT_EQ(c.rows[0].verdict, Verdict::same);
  EXPECT_EQ(compare_json(base, report({timed_result("p", {}, 103, 0.0001)})).rows[0].verdict, Verdict::slower);
}

// attention wgmma D=128 N=4096 causal on the H200 (180acf5): 61.5, 61.8, 58.6% of the clock peak over
// three runs, 5.5% apart: held to its drift, not failed at the 5% threshold; a drift past 7% (1.4x the
// threshold) gives no wider band, so 8% more time, a rate 7.4% lower, always fails.
TEST(Compare, ARowIsHeldToItsRecordedDriftUpToACap) {
  const auto drifted = [](double drift_pct) {
    auto base = report({timed_result("p", {}, 100, 0.0001)});
    base["results"][0]["metrics"]["cycles"]["drift_pct"] = drift_pct;
    base["results"][0]["metrics"]["cycles"]["runs"] = 3;
    return base;
  };
  const auto now = [](double cycles) { return report({timed_result("p", {}, cycles, 0.0001)}); };
  const auto c = compare_json(drifted(6.0), now(105.5));
  EXPECT_EQ(c.rows[0].verdict, Verdict::same);
  EXPECT_FALSE(c.failed()) << "5.5% slower, inside its 6% drift";
  EXPECT_TRUE(compare_json(drifted(6.0), now(106.5)).failed()) << "past its drift and the threshold";
  const auto capped = compare_json(drifted(12.0), now(107.5));
  EXPECT_DOUBLE_EQ(capped.rows[0].band_pct, 7.0);
  EXPECT_TRUE(capped.failed()) << "7.5% slower: the band stops at 1.4x the threshold";
  EXPECT_TRUE(compare_json(drifted(1.0), now(105.5)).failed()) << "a steady row fails past the threshold";
}

// Figures of the H200 (attention, N=1024, three runs of one commit): a power-state change moves the
// per-second figure of a clock-bound row and the per-clock figure of a memory-bound one; a raw run
// cannot tell which it is, so each is judged by the reading that holds.
TEST(Compare, AgainstARawRunEachRowIsJudgedByTheReadingTheClockDoesNotMove) {
  const auto memory_bound = compare_json(report({clocked_result(46.9383, 361.0)}), report({clocked_result(41.5531, 376.5)}));
  EXPECT_EQ(memory_bound.rows[0].metric, "tflops");
  EXPECT_EQ(memory_bound.rows[0].verdict, Verdict::faster) << "+4.3% per second where per clock read -11.5%";
  EXPECT_FALSE(memory_bound.failed());
  const auto clock_bound = compare_json(report({clocked_result(61.1486, 570.3)}), report({clocked_result(61.1816, 517.7)}));
  EXPECT_EQ(clock_bound.rows[0].metric, "pct_clock_peak");
  EXPECT_EQ(clock_bound.rows[0].verdict, Verdict::same) << "-9.2% per second at a 9% lower clock";
}

TEST(Compare, ASlowerKernelLosesPerClockAndPerSecondAndFails) {
  const auto c = compare_json(report({clocked_result(50, 400)}), report({clocked_result(50 / 1.08, 400 / 1.08)}));
  EXPECT_TRUE(c.failed());
  EXPECT_NEAR(c.rows[0].loss_pct, 100 * (1 - 1 / 1.08), 1e-4) << "6 significant digits";
}

TEST(Compare, ABaselineJudgesOnlyByTheMetricItsRunsChose) {
  auto base = report({clocked_result(50, 400)});
  base["results"][0]["metrics"]["pct_clock_peak"]["drift_pct"] = 1.0;
  base["results"][0]["metrics"]["pct_clock_peak"]["runs"] = 3;
  const auto c = compare_json(base, report({clocked_result(46, 400)}));
  EXPECT_EQ(c.rows[0].metric, "pct_clock_peak") << "the twin is for raw runs only";
  EXPECT_TRUE(c.failed());
}

// attention wgmma D=128 N=1024 causal forward, three H200 runs of 4fc7e77: 42.7, 43.1, 47.8% of the
// clock peak (11.8% apart) at 1622, 1618, 1345 MHz; 374, 377, 347 TFLOP/s (8.7%): bound by neither
// clock alone. Past the widest band per clock, a baseline judges it as a raw run would, by the reading
// that loses less, each within its own recorded drift; a slower kernel at the same clock still fails.
TEST(Compare, ARowNeitherReadingHeldIsJudgedByTheOneThatLosesLess) {
  auto base = report({clocked_result(42.744, 374.256)});
  auto& m = base["results"][0]["metrics"];
  m["pct_clock_peak"]["drift_pct"] = 11.8;
  m["tflops"]["drift_pct"] = 8.7;
  m["pct_clock_peak"]["runs"] = m["tflops"]["runs"] = 3;
  const auto hot = compare_json(base, report({clocked_result(47.801, 346.76)}));
  EXPECT_EQ(hot.rows[0].metric, "pct_clock_peak");
  EXPECT_FALSE(hot.failed()) << "-7.3% per second at a 17% lower clock, +11.8% per clock";
  EXPECT_TRUE(compare_json(base, report({clocked_result(42.744 / 1.08, 374.256 / 1.08)})).failed());
}

// A gate run of 160-key attention tiles (docs/decisions/002-changes-measured-in-turns.md) at D = 128 N = 16384,
// 76.09 -> 77.86% of the clock peak and 701.7 -> 627.9 TFLOP/s, the clock 1705 -> 1492 MHz. Faster
// as judged, with a note in the markdown and the JSON; no note where the clock only drifted (the row
// the same per clock) or where both readings gained.
TEST(Compare, FasterPerClockButSlowerPerSecondIsNotedNotJudged) {
  const auto c = compare_json(report({clocked_result(76.09, 701.656)}), report({clocked_result(77.86, 627.916)}));
  EXPECT_EQ(c.rows[0].verdict, Verdict::faster);
  EXPECT_FALSE(c.failed());
  EXPECT_NEAR(c.rows[0].per_second_loss_pct, 100 * (1 - 627.916 / 701.656), 1e-3);
  const std::string md = tkprobe::to_markdown(c);
  EXPECT_TRUE(mentions(md, "### Faster per clock, slower per second")) << md;
  EXPECT_TRUE(mentions(md, "- attention seq=1024 causal=true: pct_clock_peak +2.33%, but 10.51% slower per second")) << md;
  EXPECT_NEAR(tkprobe::to_json(c)["rows"][0]["per_second_loss_pct"].get<double>(), 10.51, 0.01);
  for (const auto& quiet : {compare_json(report({clocked_result(61.1486, 570.3)}), report({clocked_result(61.1816, 517.7)})),
                            compare_json(report({clocked_result(50, 400)}), report({clocked_result(55, 420)}))}) {
    EXPECT_EQ(quiet.rows[0].per_second_loss_pct, 0);
    EXPECT_FALSE(mentions(tkprobe::to_markdown(quiet), "slower per second"));
    EXPECT_FALSE(tkprobe::to_json(quiet)["rows"][0].contains("per_second_loss_pct"));
  }
}

TEST(Compare, PerSecondTwinOfEveryPerClockMetric) {
  EXPECT_EQ(tkprobe::per_second_twin("pct_clock_peak"), "tflops");
  EXPECT_EQ(tkprobe::per_second_twin("wgmma_pct_clock_peak"), "wgmma_tflops");
  EXPECT_EQ(tkprobe::per_second_twin("cycles"), "");
  EXPECT_EQ(tkprobe::per_second_twin("tflops"), "");
}

TEST(Compare, SlowerButUnderThresholdIsReportedNotFailed) {
  const auto c = compare_one(100, 103, 0.001);
  EXPECT_EQ(c.rows[0].verdict, Verdict::slower);
  EXPECT_FALSE(c.failed());
  tkprobe::CompareOptions strict;
  strict.threshold_pct = 2.0;
  EXPECT_TRUE(
      compare_json(report({timed_result("p", {}, 100, 0.001)}), report({timed_result("p", {}, 103, 0.001)}), strict)
          .failed());
}

TEST(Compare, MissingRowFailsAndNewRowDoesNot) {
  const auto base = report({timed_result("p", {{"s", 1}}, 100, 0.01), timed_result("p", {{"s", 2}}, 100, 0.01)});
  const auto now = report({timed_result("p", {{"s", 1}}, 100, 0.01), timed_result("p", {{"s", 3}}, 100, 0.01)});
  const auto c = compare_json(base, now);
  ASSERT_EQ(c.rows.size(), 3u);
  EXPECT_EQ(c.rows[1].verdict, Verdict::missing);
  EXPECT_TRUE(c.rows[1].fails);
  EXPECT_EQ(c.rows[2].verdict, Verdict::added);
  EXPECT_FALSE(c.rows[2].fails);
  EXPECT_EQ(compare_files(base, now).code, 1);
}

TEST(Compare, AProbeThatDidNotRunIsNotARegression) {
  const auto base = report({timed_result("a", {}, 100, 0.01), timed_result("b", {}, 100, 0.01)});
  auto now = report({timed_result("a", {}, 100, 0.01)});
  now["tool"]["probes"] = {"a"};
  const auto c = compare_json(base, now);
  EXPECT_EQ(c.rows[1].verdict, Verdict::not_run);
  EXPECT_FALSE(c.failed());
  now["tool"]["probes"] = {"a", "b"};  // b ran and lost its row: that fails
  EXPECT_EQ(compare_json(base, now).rows[1].verdict, Verdict::missing);
  EXPECT_TRUE(compare_json(base, now).failed());
}

TEST(Compare, PeerRowsAreReportedNeverJudged) {
  auto peer_base = timed_result("gemm", {{"kernel", "cublaslt"}}, 100, 0.001, Better::higher);
  peer_base.peer = true;
  auto peer_now = timed_result("gemm", {{"kernel", "cublaslt"}}, 50, 0.001, Better::higher);
  peer_now.peer = true;
  const auto c = compare_json(report({peer_base}), report({peer_now}));
  EXPECT_EQ(c.rows[0].verdict, Verdict::peer);
  EXPECT_FALSE(c.rows[0].judged());
  EXPECT_FALSE(c.failed());
  EXPECT_TRUE(mentions(tkprobe::to_markdown(c), "-50.00%"));
  EXPECT_FALSE(mentions(tkprobe::to_junit(c), "<testcase"));
}

// A row its probe reports but does not judge (its figures move between processes) is n/a, however
// far it moves; only the baseline can say so: a new report that drops a judged row's primary
// metric is still held to the baseline's.
TEST(Compare, ARowItsProbeDoesNotJudgeIsReportedNeverFailedButOnlyTheBaselineSaysSo) {
  auto unjudged = [](double tbps) {
    auto r = timed_result("l2", {{"l2_share", 0.875}}, tbps, 0.001, Better::higher);
    r.not_judged("moves between processes");
    return r;
  };
  const auto c = compare_json(report({unjudged(7.9)}), report({unjudged(7.2)}));
  EXPECT_EQ(c.rows[0].verdict, Verdict::not_comparable);
  EXPECT_FALSE(c.rows[0].judged());
  EXPECT_FALSE(c.failed());
  const auto judged = compare_json(report({timed_result("l2", {{"l2_share", 0.875}}, 7.9, 0.001, Better::higher)}),
                                   report({unjudged(7.2)}));
  EXPECT_EQ(judged.rows[0].verdict, Verdict::slower);
  EXPECT_TRUE(judged.failed());
}

namespace {

tkprobe::Result status_row(const std::string& probe, tkprobe::Json params, tkprobe::Status status,
                           const std::string& reason) {
  tkprobe::Result r(probe, params.is_null() ? Json::object() : std::move(params));
  r.status = status;
  r.reason = reason;
  return r;
}

// The last line of `md` that starts with `start`: a row of the folded table of every row.
std::string last_line(const std::string& md, const std::string& start) {
  const auto at = md.rfind("\n" + start);
  if (at == std::string::npos) return "";
  return md.substr(at + 1, md.find('\n', at + 1) - at - 1);
}

}  // namespace

// Each kind of row without a judged change, written by `compare --markdown`, with the reason it
// has none in the why column; a judged row leaves the column empty.
TEST(Compare, EveryRowWithoutAJudgedChangeSaysWhy) {
  tkprobe::Result plain("decode", {{"n", 1}});
  plain.value("bits", 32);
  auto unjudged = timed_result("l2", {{"l2_share", 0.875}}, 7.9, 0.001, Better::higher);
  unjudged.not_judged("moves between processes");
  auto peer = timed_result("gemm", {{"kernel", "cublaslt"}}, 100, 0.001, Better::higher);
  peer.peer = true;
  const auto refused = status_row("cluster", {{"size", 16}}, tkprobe::Status::skipped, "the driver refuses 16");
  auto failing = timed_result("p", {{"s", 1}}, 100, 0.001);
  failing.checked({{"what", "XOR of every word read"}}, false);
  const Json base = report({plain, unjudged, peer, refused, timed_result("bandwidth", {{"copy", "tma"}}, 100, 0.001),
                            timed_result("zero", {}, 0, 0.001), timed_result("p", {{"s", 1}}, 100, 0.001),
                            timed_result("p", {{"s", 2}}, 100, 0.001), timed_result("p", {{"s", 4}}, 100, 0.001),
                            timed_result("p", {{"s", 5}}, 100, 0.001), timed_result("q", {}, 100, 0.001)});
  Json now = report({plain, unjudged, peer, refused,
                     status_row("bandwidth", {{"copy", "tma"}}, tkprobe::Status::skipped, "sm_90a only"),
                     timed_result("zero", {}, 0, 0.001), failing, timed_result("p", {{"s", 3}}, 100, 0.001),
                     timed_result("p", {{"s", 4}}, 100, 0.001), tkprobe::Result("p", {{"s", 5}})});
  now["tool"]["probes"] = {"decode", "l2", "gemm", "cluster", "bandwidth", "zero", "p"};
  const auto md_file = fixtures::temp_dir("compare-why") / "summary.md";
  EXPECT_EQ(compare_files(base, now, {"--markdown", md_file.string()}).code, 1);
  std::ifstream in(md_file);
  const std::string md(std::istreambuf_iterator<char>(in), {});
  EXPECT_TRUE(mentions(md, "| verdict | why |")) << md;
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"| decode | n=1 |", "| n/a | plain values, no judged metric |"},
      {"| l2 | l2_share=0.875 |", "| n/a | not judged by its probe: moves between processes |"},
      {"| gemm | kernel=cublaslt |", "| peer | a peer's figure: reported, never judged |"},
      {"| cluster | size=16 |", "| skipped | skipped in both: the driver refuses 16 |"},
      {"| bandwidth | copy=tma |", "| skipped **FAIL** | skipped in new: sm_90a only |"},
      {"| zero |  |", "| n/a | the baseline's 'cycles' is 0: no change to measure from it |"},
      {"| p | s=1 |", "| failed **FAIL** | failed in new: its check (XOR of every word read) |"},
      {"| p | s=2 |", "| missing **FAIL** | missing from new, though its probe ran |"},
      {"| p | s=5 |", "| no figure **FAIL** | new has no 'cycles' to judge |"},
      {"| q |  |", "| not run | its probe did not run in new |"},
      {"| p | s=3 |", "| new | not in the baseline |"},
      {"| p | s=4 |", "| same |  |"},
  };
  for (const auto& [row, verdict_and_why] : rows) {
    const std::string line = last_line(md, row);
    EXPECT_TRUE(line.size() >= verdict_and_why.size() &&
                line.compare(line.size() - verdict_and_why.size(), verdict_and_why.size(), verdict_and_why) == 0)
        << row << " reads: " << line;
  }
}

// Only a report read without its checks (compare_reports on a document) can name a plain value as
// its primary metric: the reader refuses it on a row that ran.
TEST(Compare, APlainPrimaryMetricSaysSo) {
  tkprobe::Result plain("decode", {{"n", 1}});
  plain.value("bits", 32);
  plain.primary = "bits";
  const auto c = compare_json(report({plain}), report({plain}));
  EXPECT_EQ(c.rows[0].verdict, Verdict::not_comparable);
  EXPECT_EQ(c.rows[0].why, "'bits' is a plain value, not a measurement");
  EXPECT_EQ(tkprobe::to_json(c)["rows"][0]["why"], c.rows[0].why);
}

// A free-text reason cannot end its cell early.
TEST(Compare, AReasonsBarIsEscapedInTheTable) {
  const auto skipped = status_row("p", {}, tkprobe::Status::skipped, "a | b");
  const std::string md = tkprobe::to_markdown(compare_json(report({skipped}), report({skipped})));
  EXPECT_TRUE(mentions(md, "| skipped | skipped in both: a \\| b |")) << md;
}

TEST(Compare, JudgedRowWithoutItsMetricFails) {
  auto now = report({timed_result("p", {}, 100, 0.01)});
  now["results"][0].erase("primary");
  now["results"][0]["metrics"] = Json::object();
  const auto c = compare_json(report({timed_result("p", {}, 100, 0.01)}), now);
  EXPECT_EQ(c.rows[0].verdict, Verdict::no_figure);
  EXPECT_TRUE(c.failed());
}

TEST(Compare, ParamOrderDoesNotMatter) {
  const auto c = compare_json(report({timed_result("p", {{"a", 1}, {"b", 2}}, 100, 0.01)}),
                              report({timed_result("p", {{"b", 2}, {"a", 1}}, 100, 0.01)}));
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].verdict, Verdict::same);
}

TEST(Compare, FailedResultFails) {
  auto failing = timed_result("p", {}, 100, 0.01);
  failing.checked({{"what", "x"}}, false);
  EXPECT_TRUE(compare_json(report({timed_result("p", {}, 100, 0.01)}), report({failing})).failed());
}

TEST(Compare, DifferentGpusAreRefusedUnlessAllowed) {
  const auto h200 = report({timed_result("p", {}, 100, 0.01)}, "NVIDIA H200");
  const auto h100 = report({timed_result("p", {}, 100, 0.01)}, "NVIDIA H100 80GB HBM3");
  EXPECT_THROW(compare_json(h200, h100), tkprobe::UsageError);
  tkprobe::CompareOptions allow;
  allow.allow_device_mismatch = true;
  EXPECT_NO_THROW(compare_json(h200, h100, allow));
  const auto refused = compare_files(h200, h100);
  EXPECT_EQ(refused.code, 2);
  EXPECT_TRUE(mentions(refused.err, "--allow-device-mismatch"));
  EXPECT_EQ(compare_files(h200, h100, {"--allow-device-mismatch"}).code, 0);
}

// Two cards of one model: compared, with a caution in every output; one card, or a report without
// the UUID (made before reports recorded it), none.
TEST(Compare, DifferentCardsOfOneModelAreComparedWithACaution) {
  auto on_card = [](const char* uuid) {
    Json r = report({timed_result("p", {}, 100, 0.01)});
    if (uuid) r["device"]["uuid"] = uuid;
    return r;
  };
  const char* a = "GPU-0a1b2c3d-0000-1111-2222-333344445555";
  const char* b = "GPU-ffffffff-0000-1111-2222-333344445555";
  const auto two = compare_json(on_card(a), on_card(b));
  EXPECT_FALSE(two.failed());
  EXPECT_TRUE(mentions(two.caution, a) && mentions(two.caution, b)) << two.caution;
  EXPECT_TRUE(mentions(tkprobe::to_markdown(two), "> Caution: base and new ran on different cards"));
  EXPECT_EQ(tkprobe::to_json(two)["caution"], two.caution);
  EXPECT_EQ(compare_json(on_card(a), on_card(a)).caution, "");
  EXPECT_EQ(compare_json(on_card(nullptr), on_card(b)).caution, "");
  EXPECT_FALSE(tkprobe::to_json(compare_json(on_card(a), on_card(a))).contains("caution"));
  const auto run = compare_files(on_card(a), on_card(b));
  EXPECT_EQ(run.code, 0);
  EXPECT_TRUE(mentions(run.out, "different cards")) << run.out;
}

TEST(Compare, NotAReportOrOtherSchemaExitsTwo) {
  const auto dir = fixtures::temp_dir("compare-bad");
  const auto good = fixtures::write(dir / "good.json", report({timed_result("p", {}, 1, 0)}).dump());
  const auto text = fixtures::write(dir / "text.json", "hello");
  const auto v3 = fixtures::write(dir / "v3.json", R"({"schema": "tkprobe.report/4", "results": []})");
  const auto a = fixtures::run({"compare", good.string(), text.string()});
  EXPECT_EQ(a.code, 2);
  EXPECT_TRUE(mentions(a.err, "not JSON")) << a.err;
  const auto b = fixtures::run({"compare", v3.string(), good.string()});
  EXPECT_EQ(b.code, 2);
  EXPECT_TRUE(mentions(b.err, "valid: 'tkprobe.report/3', 'tkprobe.report/2', 'tkprobe.report/1'")) << b.err;
}

// The malformed reports the gate must refuse with one line naming the file, the row and what is
// wrong (exit 2), never a library's message or exit 4.
TEST(Compare, MalformedReportsExitTwoNamingFileAndRow) {
  const std::string good = report({timed_result("p", {}, 100, 0.01)}).dump();
  auto with_results = [&](const std::string& results) {
    Json j = Json::parse(good);
    j["results"] = Json::parse(results);
    return j.dump();
  };
  Json string_median = Json::parse(good);
  string_median["results"][0]["metrics"]["cycles"]["median"] = "fast";
  Json string_status = Json::parse(good);
  string_status["results"][0]["status"] = 7;
  Json no_primary = Json::parse(good);
  no_primary["results"][0]["metrics"] = Json::object();
  std::string huge = good;
  huge.replace(huge.find("\"median\":100.0"), 14, "\"median\":1e999");
  Json duplicate = Json::parse(good);
  duplicate["results"].push_back(duplicate["results"][0]);

  const std::vector<std::pair<std::string, std::string>> cases = {
      {with_results(R"([1, "x", null])"), "/results/0"},
      {string_median.dump(), "/results/0/metrics/cycles"},
      {string_status.dump(), "/results/0/status"},
      {no_primary.dump(), "primary metric 'cycles'"},
      {huge, "out of a double's range"},
      {duplicate.dump(), "/results/1: same probe and params as /results/0"},
  };
  for (const auto& [bad, what] : cases) {
    for (const bool bad_is_new : {true, false}) {
      const auto run = bad_is_new ? compare_text(good, bad) : compare_text(bad, good);
      EXPECT_EQ(run.code, 2) << what << "\n" << run.err;
      EXPECT_TRUE(mentions(run.err, what)) << run.err;
      EXPECT_TRUE(mentions(run.err, bad_is_new ? "new.json" : "base.json")) << run.err;
      EXPECT_FALSE(mentions(run.err, "json.exception")) << run.err;
      EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    }
  }
}

TEST(Compare, FoldersOfReportsAreOneBaseline) {
  const auto dir = fixtures::temp_dir("compare-folder");
  std::filesystem::create_directories(dir / "base");
  std::filesystem::create_directories(dir / "empty");
  fixtures::write(dir / "base" / "a.json", report({timed_result("a", {}, 100, 0.01)}).dump());
  fixtures::write(dir / "base" / "b.json", report({timed_result("b", {}, 100, 0.01)}).dump());
  fixtures::write(dir / "base" / "notes.txt", "not a report, not read");
  const auto now = fixtures::write(
      dir / "new.json", report({timed_result("a", {}, 100, 0.01), timed_result("b", {}, 100, 0.01)}).dump());
  const auto ok = fixtures::run({"compare", (dir / "base").string(), now.string()});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(mentions(ok.out, "2 rows: 2 same")) << ok.out;

  const auto empty = fixtures::run({"compare", (dir / "empty").string(), now.string()});
  EXPECT_EQ(empty.code, 2);
  EXPECT_TRUE(mentions(empty.err, "no reports")) << empty.err;

  fixtures::write(dir / "base" / "c.json", report({timed_result("a", {}, 100, 0.01)}).dump());  // a again
  const auto twice = fixtures::run({"compare", (dir / "base").string(), now.string()});
  EXPECT_EQ(twice.code, 2);
  EXPECT_TRUE(mentions(twice.err, "c.json")) << twice.err;
  std::filesystem::remove(dir / "base" / "c.json");

  fixtures::write(dir / "base" / "d.json", report({timed_result("d", {}, 1, 0.01)}, "NVIDIA H100").dump());
  const auto mixed = fixtures::run({"compare", (dir / "base").string(), now.string()});
  EXPECT_EQ(mixed.code, 2);
  EXPECT_TRUE(mentions(mixed.err, "one GPU model")) << mixed.err;

  std::filesystem::remove(dir / "base" / "d.json");

  fixtures::write(dir / "base" / "e.json", R"({"schema": "tkprobe.report/4", "results": []})");
  const auto versions = fixtures::run({"compare", (dir / "base").string(), now.string()});
  EXPECT_EQ(versions.code, 2);
  EXPECT_TRUE(mentions(versions.err, "e.json: report schema 'tkprobe.report/4' is not supported")) << versions.err;

  EXPECT_THROW(tkprobe::read_report(dir / "base"), tkprobe::UsageError);  // a folder where a file is due
}

TEST(Compare, ProbesOptionLimitsTheComparison) {
  const auto base = report({timed_result("a", {}, 100, 0.01), timed_result("b", {}, 100, 0.01)});
  const auto now = report({timed_result("a", {}, 100, 0.01), timed_result("b", {}, 200, 0.01)});
  EXPECT_EQ(compare_files(base, now).code, 1);
  const auto run = compare_files(base, now, {"--probes", "smem-banks"});
  EXPECT_EQ(run.code, 0) << run.err;  // neither a nor b is compared
  const auto unknown = compare_files(base, now, {"--probes", "smem-banks,nope"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_TRUE(mentions(unknown.err, "unknown probe 'nope'")) << unknown.err;
  EXPECT_TRUE(mentions(unknown.err, "smem-latency")) << "lists the valid probes";
}

TEST(Compare, NonFiniteOrNegativeThresholdIsAUsageError) {
  const auto r = report({timed_result("p", {}, 100, 0.01)});
  for (const char* bad : {"nan", "inf", "-5", "0", "five"}) {
    const auto run = compare_files(r, r, {"--threshold", bad});
    EXPECT_EQ(run.code, 2) << bad;
    EXPECT_TRUE(mentions(run.err, "--threshold")) << run.err;
  }
}

TEST(Compare, MeasurementBoundsRejectNanBeforeAnyDeviceWork) {
  for (const char* option : {"--timeout", "--min-time", "--max-noise"}) {
    for (const char* bad : {"nan", "inf", "-1"}) {
      const auto run = fixtures::run({"smem-latency", option, bad});
      EXPECT_EQ(run.code, 2) << option << " " << bad << ": " << run.err;
    }
  }
  EXPECT_EQ(fixtures::run({"all", "--probes", "nope"}).code, 2);
}

TEST(Compare, JunitHasOneCasePerJudgedRowAndFailuresWithFigures) {
  auto peer = timed_result("gemm", {{"kernel", "cublaslt"}}, 100, 0.001);
  peer.peer = true;
  const auto base = report({timed_result("p", {{"s", 1}}, 100, 0.001), timed_result("p", {{"s", 2}}, 100, 0.001),
                            timed_result("p", {{"s", 3}}, 100, 0.001), peer});
  const auto now = report({timed_result("p", {{"s", 1}}, 100, 0.001), timed_result("p", {{"s", 2}}, 120, 0.001),
                           peer});
  const auto c = compare_json(base, now);
  const std::string xml = tkprobe::to_junit(c);
  EXPECT_TRUE(mentions(xml, "tests=\"3\" failures=\"2\"")) << xml;
  EXPECT_TRUE(mentions(xml, "name=\"p s=2\"><failure message=\"cycles: 100 -&gt; 120 cycles (+20.00%)")) << xml;
  EXPECT_TRUE(mentions(xml, "type=\"missing\"")) << xml;

  const auto dir = fixtures::temp_dir("junit");
  const auto run = compare_files(base, now, {"--junit", (dir / "out.xml").string()});
  EXPECT_EQ(run.code, 1);
  EXPECT_TRUE(std::filesystem::exists(dir / "out.xml"));
  const auto missing_folder = compare_files(base, now, {"--junit", (dir / "no" / "out.xml").string()});
  EXPECT_EQ(missing_folder.code, 2);
  EXPECT_TRUE(mentions(missing_folder.err, "--junit")) << missing_folder.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "no"));
}

TEST(Compare, MarkdownSummaryPutsTheVerdictAndRegressionsFirst) {
  const auto base = report({timed_result("p", {{"s", 1}}, 100, 0.001), timed_result("p", {{"s", 2}}, 100, 0.001)});
  const auto now = report({timed_result("p", {{"s", 1}}, 101, 0.001), timed_result("p", {{"s", 2}}, 110, 0.001)});
  const std::string md = tkprobe::to_markdown(compare_json(base, now));
  EXPECT_EQ(md.rfind("## tkprobe compare: FAIL", 0), 0u) << md;
  const auto regressions = md.find("### Regressions"), closest = md.find("### Closest calls"),
             folded = md.find("<details>");
  ASSERT_NE(regressions, std::string::npos);
  ASSERT_NE(closest, std::string::npos);
  ASSERT_NE(folded, std::string::npos);
  EXPECT_LT(regressions, closest);
  EXPECT_LT(closest, folded);
  EXPECT_TRUE(mentions(md.substr(regressions, closest - regressions), "| p | s=2 | cycles |")) << md;
  EXPECT_TRUE(mentions(md.substr(closest, folded - closest), "| p | s=1 | cycles |")) << md;
  EXPECT_TRUE(mentions(md, "2 rows: 2 slower. Threshold 5.0%: 1 failing row(s), exit 1.")) << md;
  EXPECT_EQ(tkprobe::to_markdown(compare_json(base, base)).rfind("## tkprobe compare: pass", 0), 0u);
}

// ---- reports of several devices (--devices): compared device by device ----

namespace {

// Device `index`'s run of a two-row suite (p and q, cycles), under its own UUID.
Json device_run(int index, double p, double q = 50, const std::string& gpu = "NVIDIA H200") {
  Json r = report({timed_result("p", {{"s", 1}}, p, 0.002), timed_result("q", {{"s", 1}}, q, 0.002)}, gpu);
  r["tool"]["probes"] = {"p", "q"};
  r["device"]["index"] = index;
  r["device"]["uuid"] = fmt::format("GPU-0000000{}-0000-0000-0000-000000000000", index);
  return r;
}

std::vector<int> failing_devices(const tkprobe::Comparison& c) {
  std::vector<int> out;
  for (const auto& r : c.rows)
    if (r.fails) out.push_back(r.device);
  return out;
}

}  // namespace

// The CI recipe on a node: every GPU against the one-GPU baseline; the one 10% slow fails alone.
TEST(CompareDevices, EveryDeviceIsJudgedAgainstABaselineOfOne) {
  const Json base = device_run(0, 100);
  const Json node = fixtures::several_devices({device_run(0, 100), device_run(1, 110), device_run(2, 101)});
  const auto c = compare_json(base, node);
  ASSERT_EQ(c.rows.size(), 6u);
  EXPECT_EQ(failing_devices(c), std::vector<int>{1});
  EXPECT_EQ(c.rows[2].device, 1);
  EXPECT_TRUE(mentions(c.caution, "2 of new's devices are other cards")) << c.caution;
  const auto run = compare_files(base, node, {"--junit", (fixtures::temp_dir("compare-devices") / "j.xml").string()});
  EXPECT_EQ(run.code, 1) << run.err;
  EXPECT_TRUE(mentions(run.out, "| probe | device | params |")) << run.out;
  EXPECT_TRUE(mentions(run.out, "| p | 1 | s=1 | cycles |")) << run.out;
  EXPECT_EQ(compare_json(base, fixtures::several_devices({device_run(0, 100), device_run(1, 101)})).failing(), 0);
}

// Two runs of one node: device by device; a device that vanished fails, one that appeared is new.
TEST(CompareDevices, TwoRunsOfANodePairTheirDevicesByIndex) {
  const Json base = fixtures::several_devices({device_run(0, 100), device_run(1, 100)});
  EXPECT_FALSE(compare_json(base, fixtures::several_devices({device_run(0, 101), device_run(1, 99)})).failed());
  const auto lost = compare_json(base, fixtures::several_devices({device_run(0, 100)}));
  EXPECT_EQ(failing_devices(lost), (std::vector<int>{1, 1}));
  EXPECT_EQ(lost.rows[2].verdict, Verdict::missing);
  const auto gained = compare_json(base, fixtures::several_devices({device_run(0, 100), device_run(1, 100),
                                                                    device_run(2, 100)}));
  EXPECT_FALSE(gained.failed());
  EXPECT_EQ(gained.rows[4].verdict, Verdict::added);
  EXPECT_EQ(gained.rows[4].device, 2);
  // A probe the new run did not run is not a regression on any device.
  Json only_p = fixtures::several_devices({device_run(0, 100)});
  only_p["tool"]["probes"] = {"p"};
  only_p["results"].erase(1);
  const auto partial = compare_json(base, only_p);
  EXPECT_EQ(partial.rows[1].verdict, Verdict::not_run);
  EXPECT_EQ(partial.rows[3].verdict, Verdict::not_run) << "device 1 ran nothing of q either";
  EXPECT_EQ(partial.rows[2].verdict, Verdict::missing);
}

// p2p's rows are compared with the last run's p2p rows; against a baseline of one GPU they are new.
TEST(CompareDevices, RowsThatSpanDevicesAreComparedWithTheirOwn) {
  const Json pairs = report({timed_result("p2p", {{"src", 0}, {"dst", 1}}, 900, 0.002)});
  const Json slow_pairs = report({timed_result("p2p", {{"src", 0}, {"dst", 1}}, 1000, 0.002)});
  const Json base = fixtures::several_devices({device_run(0, 100), device_run(1, 100)}, pairs);
  const auto c = compare_json(base, fixtures::several_devices({device_run(0, 100), device_run(1, 100)}, slow_pairs));
  EXPECT_EQ(failing_devices(c), std::vector<int>{-1});
  EXPECT_EQ(c.rows.back().probe, "p2p");
  const auto against_one = compare_json(device_run(0, 100), base);
  EXPECT_FALSE(against_one.failed());
  EXPECT_EQ(against_one.rows.back().verdict, Verdict::added);
  EXPECT_EQ(compare_json(base, fixtures::several_devices({device_run(0, 100), device_run(1, 100)})).rows.back().verdict,
            Verdict::not_run);
}

TEST(CompareDevices, AnotherModelOnOneDeviceIsRefusedUnlessAllowed) {
  const Json node = fixtures::several_devices({device_run(0, 100), device_run(1, 100, 50, "NVIDIA H100 80GB HBM3")});
  const auto run = compare_files(device_run(0, 100), node);
  EXPECT_EQ(run.code, 2);
  EXPECT_TRUE(mentions(run.err, "NVIDIA H100 80GB HBM3")) << run.err;
  EXPECT_EQ(compare_files(device_run(0, 100), node, {"--allow-device-mismatch"}).code, 0);
}

// `tkprobe baseline` takes runs of a node as it takes runs of one GPU; compare then pairs devices.
TEST(CompareDevices, ABaselineOfANodesRuns) {
  const auto dir = fixtures::temp_dir("baseline-devices");
  const auto a = fixtures::write(dir / "a.json", fixtures::several_devices({device_run(0, 100), device_run(1, 102)}).dump());
  const auto b = fixtures::write(dir / "b.json", fixtures::several_devices({device_run(0, 101), device_run(1, 100)}).dump());
  const auto made = fixtures::run({"baseline", "--out", (dir / "base.json").string(), a.string(), b.string()});
  ASSERT_EQ(made.code, 0) << made.err;
  const Json base = tkprobe::read_report(dir / "base.json");
  EXPECT_EQ(base["devices"].size(), 2u);
  EXPECT_EQ(base["results"][0]["metrics"]["cycles"]["runs"], 2);
  EXPECT_FALSE(compare_json(base, fixtures::several_devices({device_run(0, 101), device_run(1, 101)})).failed());
}
