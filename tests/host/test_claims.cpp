// `tkprobe claims` judged from the committed H200 baseline (no GPU needed): every claim gets a
// row, the verdicts follow the measured figures, and what cannot be measured says why.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "src/claims.hpp"
#include "src/report.hpp"
#include "tests/fixtures.hpp"

using tkprobe::Json;

namespace {

Json committed_suite() {
  return tkprobe::read_report(std::string(TKPROBE_SOURCE_DIR) + "/results/h200/suite.json");
}

std::map<std::string, tkprobe::Result> by_claim(const std::vector<tkprobe::Result>& rows) {
  std::map<std::string, tkprobe::Result> out;
  for (const auto& r : rows) out.emplace(r.params["claim"].get<std::string>(), r);
  return out;
}

}  // namespace

TEST(Claims, TheH200BaselineHoldsSomeAndRefutesOthers) {
  const auto rows = by_claim(tkprobe::judge_claims(committed_suite()));
  ASSERT_GE(rows.size(), 15u);
  // Measured on the H200 (results/h200/suite.json): 29 cycles, 31.9-way, 66.5% and 98.4% of the clock peak.
  EXPECT_EQ(rows.at("smem-latency").metrics["verdict"], "holds");
  EXPECT_NEAR(rows.at("smem-latency").metrics["difference_pct"].get<double>(), 100.0 * (29.0 / 30 - 1), 0.5);
  EXPECT_EQ(rows.at("bank-serialization").metrics["verdict"], "holds");
  EXPECT_EQ(rows.at("mma-sync-cap").metrics["verdict"], "holds");
  EXPECT_EQ(rows.at("wgmma-utilization").metrics["verdict"], "holds");
  EXPECT_EQ(rows.at("smem-aggregate").metrics["verdict"], "holds");
  EXPECT_EQ(rows.at("sm-count").metrics["verdict"], "holds");
  // At best 9.3 TB/s from L2 (the l2 probe's map stream) where the account says ~12; the H200 reports
  // 60 MiB of L2, not 50 MB.
  EXPECT_EQ(rows.at("l2-bandwidth").metrics["verdict"], "differs");
  EXPECT_LT(rows.at("l2-bandwidth").metrics["difference_pct"].get<double>(), -15);
  // The best read is the shared-lines row; the note gives the ladder's best beside it (8.17 TB/s).
  EXPECT_NE(rows.at("l2-bandwidth").metrics["measured"].get<std::string>().find("one SM a pass: 8.17"),
            std::string::npos)
      << rows.at("l2-bandwidth").metrics["measured"];
  EXPECT_EQ(rows.at("l2-size").metrics["verdict"], "differs");
  for (const auto& [id, r] : rows) {
    if (r.status == tkprobe::Status::ok) {
      EXPECT_TRUE(r.metrics.contains("measured") && r.metrics.contains("source")) << id;
    } else {
      EXPECT_EQ(r.reason.rfind("not measured: ", 0), 0u) << id << ": " << r.reason;
      EXPECT_FALSE(r.metrics.contains("verdict")) << id << ": never a guess";
    }
  }
  // The l2 ladder (results/h200/suite.json): 272-275 cycles up to 45% of the L2, 479-522 from 55% to
  // 88%, 678 at one and a half L2s: two halves of ~31 MB.
  EXPECT_EQ(rows.at("l2-partitions").metrics["verdict"], "holds");
  EXPECT_NEAR(rows.at("l2-partitions").metrics["difference_pct"].get<double>(), 100 * (31.5 / 25 - 1), 4);
}

// One latency level up to the whole L2 is no partition; a step with nothing above it inside the L2
// either.
TEST(Claims, TwoPartitionsNeedAStepAtHalfTheL2) {
  Json flat = committed_suite();
  for (auto& r : flat["results"]) {
    if (r["probe"] == "l2" && r["params"]["test"] == "latency" && r["params"]["l2_share"].get<double>() <= 1) {
      r["metrics"]["latency_cycles"]["median"] = 275;
    }
  }
  EXPECT_EQ(by_claim(tkprobe::judge_claims(flat)).at("l2-partitions").metrics["verdict"], "differs");
  Json no_ladder = committed_suite();
  auto& results = no_ladder["results"];
  results.erase(std::remove_if(results.begin(), results.end(), [](const Json& r) { return r["probe"] == "l2"; }),
                results.end());
  EXPECT_EQ(by_claim(tkprobe::judge_claims(no_ladder)).at("l2-partitions").status, tkprobe::Status::skipped);
}

TEST(Claims, ASkippedProbeLeavesItsClaimsNotMeasuredWithItsReason) {
  Json report = committed_suite();
  for (auto& r : report["results"]) {
    if (r["probe"] != "tensor-cores") continue;
    r["status"] = "skipped";
    r["reason"] = "needs compute capability 9.0 exactly; device 0 (NVIDIA A100) is 8.0";
  }
  const auto rows = by_claim(tkprobe::judge_claims(report));
  for (const char* id : {"mma-sync-cap", "wgmma-utilization", "dense-bf16-peak"}) {
    EXPECT_EQ(rows.at(id).status, tkprobe::Status::skipped) << id;
    EXPECT_NE(rows.at(id).reason.find("needs compute capability 9.0"), std::string::npos) << rows.at(id).reason;
  }
  EXPECT_EQ(rows.at("smem-latency").status, tkprobe::Status::ok) << "the others still judge";
}

TEST(Claims, FourQuadrantsHoldWhenFourWarpsIssueFourTimesOne) {
  // The H200 (results/h200/suite.json): 28.6 FFMA lanes a cycle with one warp, 114.5 with four.
  const auto rows = by_claim(tkprobe::judge_claims(committed_suite()));
  EXPECT_EQ(rows.at("sm-quadrants").metrics["verdict"], "holds");
  EXPECT_NEAR(rows.at("sm-quadrants").metrics["difference_pct"].get<double>(), 0, 1);
  // Four warps no faster than 1.1 warps' worth: one scheduler, not four.
  Json one_scheduler = committed_suite(), without = committed_suite();
  for (auto& r : one_scheduler["results"]) {
    if (r["probe"] == "quadrants" && r["params"]["warps_per_sm"] == 4) r["metrics"]["fma_lanes_per_clock"]["median"] = 1.1 * 28.6;
  }
  EXPECT_EQ(by_claim(tkprobe::judge_claims(one_scheduler)).at("sm-quadrants").metrics["verdict"], "differs");
  auto& results = without["results"];
  for (auto it = results.begin(); it != results.end();) it = (*it)["probe"] == "quadrants" ? results.erase(it) : it + 1;
  EXPECT_EQ(by_claim(tkprobe::judge_claims(without)).at("sm-quadrants").status, tkprobe::Status::skipped);
}

TEST(Claims, EveryRunNamesAProbeTheClaimsRead) {
  std::map<std::string, int> runs;
  for (const auto& run : tkprobe::claim_runs()) ++runs[run.probe];
  for (const auto& r : tkprobe::judge_claims(committed_suite())) {
    if (r.status != tkprobe::Status::ok) continue;
    const std::string source = r.metrics["source"];
    EXPECT_TRUE(source == "device query" || runs.count(source)) << source << " is not run by claims";
  }
}

TEST(Claims, BadOptionsExitTwo) {
  const auto format = fixtures::run({"claims", "--format", "pdf"});
  EXPECT_EQ(format.code, 2);
  EXPECT_NE(format.err.find("--format"), std::string::npos) << format.err;
  const auto unknown = fixtures::run({"claims", "--quick"});
  EXPECT_EQ(unknown.code, 2) << "claims is quick unless --full";
  const std::string suite = std::string(TKPROBE_SOURCE_DIR) + "/results/h200/suite.json";
  EXPECT_EQ(fixtures::run({"claims", "--from", suite, "--full"}).code, 2) << "--from runs nothing to make full";
  const auto folder = fixtures::run({"claims", "--from", fixtures::temp_dir("claims-from").string()});
  EXPECT_EQ(folder.code, 2) << folder.err;
}

// The fastest unit besides the tensor cores: FFMA, 122.3 lanes per SM cycle on the H200 (eight warps),
// 2 FLOP each, against 4096 bf16 FLOP per cycle: 6.0%, the account's ~60 of 989 TFLOP/s (6.1%).
TEST(Claims, NonTensorWorkIsAFewPercentOfATensorCycle) {
  const auto rows = by_claim(tkprobe::judge_claims(committed_suite()));
  const auto& r = rows.at("non-tensor-cycles");
  EXPECT_EQ(r.metrics["verdict"], "holds");
  const double pct = 100 * 2 * 122.261 / 4096, stated = 100.0 * 60 / 989;
  EXPECT_NEAR(r.metrics["difference_pct"].get<double>(), 100 * (pct / stated - 1), 0.05);
}

// --from judges a report already made (here the committed baseline): no probe runs, no GPU.
TEST(Claims, FromAReportNeedsNoGpu) {
  const auto dir = fixtures::temp_dir("claims-from-suite");
  const auto run = fixtures::run({"claims", "--from", std::string(TKPROBE_SOURCE_DIR) + "/results/h200/suite.json",
                                  "--json", (dir / "claims.json").string()});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.err.find("claims: "), std::string::npos) << "no probe ran: " << run.err;
  const Json written = tkprobe::read_report(dir / "claims.json");
  EXPECT_EQ(written["device"]["name"], "NVIDIA H200");
  EXPECT_EQ(written["results"].size(), tkprobe::judge_claims(committed_suite()).size());
}
