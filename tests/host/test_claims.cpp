// `tkprobe claims` judged from the committed H200 baseline (no GPU needed): every claim gets a
// row, the verdicts follow the measured figures, and what cannot be measured says why.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "src/claims.hpp"
#include "tests/fixtures.hpp"

using tkprobe::Json;

namespace {

Json committed_suite() {
  std::ifstream in(std::string(TKPROBE_SOURCE_DIR) + "/results/h200/suite.json");
  return Json::parse(in);
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
  // 7.2 TB/s from L2 where the account says ~12; the H200 reports 60 MiB of L2, not 50 MB.
  EXPECT_EQ(rows.at("l2-bandwidth").metrics["verdict"], "differs");
  EXPECT_LT(rows.at("l2-bandwidth").metrics["difference_pct"].get<double>(), -30);
  EXPECT_EQ(rows.at("l2-size").metrics["verdict"], "differs");
  for (const auto& [id, r] : rows) {
    if (r.status == tkprobe::Status::ok) {
      EXPECT_TRUE(r.metrics.contains("measured") && r.metrics.contains("source")) << id;
    } else {
      EXPECT_EQ(r.reason.rfind("not measured: ", 0), 0u) << id << ": " << r.reason;
      EXPECT_FALSE(r.metrics.contains("verdict")) << id << ": never a guess";
    }
  }
  EXPECT_EQ(rows.at("l2-partitions").status, tkprobe::Status::skipped);
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
}
