// The tensor-core probes on a real GPU: every instruction variant's product matches the host's
// (which proves descriptors and fragment layouts), and the figures show the seed's fact:
// wgmma reaches the tensor cores' clock peak, mma.sync stalls well below it.
#include <gtest/gtest.h>

#include <map>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::median;
using gpu_fixtures::run_probe;
using tkprobe::Json;

namespace {

// Every row ran and its product check passed; returns how many rows there were.
std::size_t expect_all_correct(const Json& report) {
  for (const auto& r : report["results"]) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_TRUE(r["check"]["passed"].get<bool>()) << r["params"].dump() << " " << r["check"].dump();
  }
  return report["results"].size();
}

const Json* find(const Json& report, const Json& params) {
  for (const auto& r : report["results"]) {
    bool match = true;
    for (const auto& [k, v] : params.items()) match &= r["params"].value(k, Json()) == v;
    if (match) return &r;
  }
  return nullptr;
}

}  // namespace

TEST(Wgmma, EveryShapeTypeAndASourceComputesTheRightProduct) {
  // 32 N x 2 A sources for five types, 18 N x 2 for s8.
  EXPECT_EQ(expect_all_correct(run_probe("wgmma", {"--sweep", "--dtype", "bf16,fp16,tf32,e4m3,e5m2,s8",
                                                   "--warpgroups", "1", "--min-time", "0.001"})),
            5 * 64 + 36u);
  EXPECT_EQ(expect_all_correct(run_probe("wgmma", {"--sweep", "--dtype", "fp16,e4m3,e5m2", "--acc", "f16",
                                                   "--warpgroups", "1", "--min-time", "0.001"})),
            3 * 64u);
}

// The in-kernel clock is plausible for a loaded H200, and the probe's % of the clock peak agrees with
// its TFLOP/s over the datasheet rate per clock derived in the test (fp8 runs at twice bf16's).
void expect_consistent_clock_peak(const Json& report, const Json& r, const std::string& tflops,
                                  const std::string& pct, double flop_per_bf16_flop) {
  const double max_mhz = report["device"]["sm_clock_max_mhz"], mhz = r["telemetry"]["kernel_sm_clock_mhz"];
  EXPECT_GE(mhz, gpu_fixtures::kMinLoadedClockShare * max_mhz) << r["params"].dump();
  EXPECT_LE(mhz, gpu_fixtures::kClockAgreement * max_mhz) << r["params"].dump();
  const double peak = flop_per_bf16_flop * gpu_fixtures::kDenseBf16FlopPerSmPerClock *
                      report["device"]["sms"].get<double>() * mhz * 1e6;
  EXPECT_NEAR(median(r, pct), 100 * median(r, tflops) * 1e12 / peak, 0.03 * median(r, pct)) << r["params"].dump();
}

// Measured on the H200: 64x256 tiles reach 99.0-100.0% of the clock peak for bf16 and e4m3
// (results/NOTES.md); 95% allows the noise, and past 101% the FLOP count or the clock is wrong.
constexpr double kMinWgmmaPctClock = 95, kMaxPctClock = 101;
constexpr double kMinOccupancyWgmmaPctClock = 90;

TEST(Wgmma, LargestTilesReachTheClockPeak) {
  const Json report = run_probe("wgmma", {"--dtype", "bf16,e4m3", "--shape", "64x256"});
  for (const auto& [dtype, rate] : {std::pair{"bf16", 1.0}, std::pair{"e4m3", 2.0}}) {
    const Json* r = find(report, {{"dtype", dtype}});
    ASSERT_NE(r, nullptr) << dtype;
    EXPECT_GE(median(*r, "pct_clock_peak"), kMinWgmmaPctClock) << r->dump();
    EXPECT_LE(median(*r, "pct_clock_peak"), kMaxPctClock) << r->dump();
    expect_consistent_clock_peak(report, *r, "tflops", "pct_clock_peak", rate);
  }
}

TEST(MmaSync, EveryTypeComputesTheRightProductAndRegistersLimitResidency) {
  const Json report =
      run_probe("mma-sync", {"--dtype", "bf16,fp16,tf32,e4m3,s8", "--ilp", "1,8", "--warps-per-sm", "4,64"});
  int full_and_deep = 0;  // ILP 8 at 64 warps: 32 accumulator registers alone exceed the 32 each thread may have
  for (const auto& r : report["results"]) {
    const bool deep_and_full = r["params"]["ilp"] == 8 && r["params"]["warps_per_sm"] == 64;
    if (r["status"] == "skipped") {
      EXPECT_NE(r["reason"].get<std::string>().find("registers/thread"), std::string::npos) << r.dump();
      full_and_deep += deep_and_full;
      continue;
    }
    EXPECT_FALSE(deep_and_full) << r.dump();
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_TRUE(r["check"]["passed"].get<bool>()) << r["params"].dump();
  }
  EXPECT_EQ(full_and_deep, 5);
}

// Measured on the H200 (bf16): wgmma 98.4% of the clock peak and 933 TFLOP/s (94% of the datasheet's
// 989, the clock sagging under load), mma.sync 66.5% at best, wgmma / mma.sync 1.44.
TEST(TensorCores, WgmmaBeatsMmaSync) {
  const Json report = run_probe("tensor-cores", {"--dtype", "bf16"});
  ASSERT_EQ(expect_all_correct(report), 1u);
  const Json& r = report["results"][0];
  EXPECT_GE(median(r, "wgmma_pct_clock_peak"), kMinWgmmaPctClock);
  EXPECT_LE(median(r, "wgmma_pct_clock_peak"), kMaxPctClock);
  EXPECT_NEAR(median(r, "mma_sync_pct_clock_peak"), 66.5, 5) << "mma.sync stalls near two thirds of the peak";
  EXPECT_NEAR(r["metrics"]["wgmma_over_mma_sync"].get<double>(), 1.44, 0.12);
  EXPECT_GE(median(r, "wgmma_tflops"), 0.80 * 989.4) << "the datasheet's dense bf16, less the clock's sag";
  EXPECT_LE(median(r, "wgmma_tflops"), 1.01 * 989.4 * report["device"]["sm_clock_max_mhz"].get<double>() / 1830);
  expect_consistent_clock_peak(report, r, "wgmma_tflops", "wgmma_pct_clock_peak", 1.0);
}

TEST(Occupancy, SweepsResidencyUntilItNoLongerFits) {
  const Json report = run_probe("occupancy", {});
  std::map<std::string, int> rows;
  for (const auto& r : report["results"]) {
    if (r["status"] == "skipped") continue;
    EXPECT_TRUE(r["check"]["passed"].get<bool>()) << r["params"].dump();
    const std::string kernel = r["params"]["kernel"];
    rows[kernel]++;
    const auto& m = r["metrics"];
    EXPECT_NEAR(m["occupancy_pct"].get<double>(), 100.0 * m["warps_per_sm"].get<int>() / 64, 1e-9);
    // Residency from the blocks' own spans, not the occupancy API's promise: every block ran at once.
    constexpr int kTensorBlockWarps = 4;  // mma.sync's blocks are 4 warps, wgmma's one warpgroup
    const int asked = kernel == "stream" ? r["params"]["blocks_per_sm"].get<int>()
                                         : m["warps_per_sm"].get<int>() / kTensorBlockWarps;
    EXPECT_EQ(m["concurrent_blocks_per_sm"].get<int>(), asked) << r["params"].dump();
    if (kernel == "wgmma") {  // --quick on the H200: 94.2% with one warpgroup, 97-98% with more
      EXPECT_GE(median(r, "pct_clock_peak"), kMinOccupancyWgmmaPctClock) << r["params"].dump();
    }
  }
  for (const auto& f : report["findings"]) {
    EXPECT_NE(f["text"].get<std::string>().find(" 0 of "), std::string::npos) << "every row ran in one wave: " << f;
  }
  EXPECT_GE(rows["mma.sync"], 12) << "4-warp blocks, 1 to 16 per SM until registers run out";
  EXPECT_GE(rows["wgmma"], 2) << "at least two 64x256 warpgroups fit";
  EXPECT_EQ(rows["stream"], 8) << "256-thread blocks, 1 to 8 per SM";
  EXPECT_EQ(report["findings"].size(), 3u);
}

TEST(Gemm, TheDslGemmAgreesWithCublasLt) {
  const Json report = run_probe("gemm", {});  // --quick: 2048^3
  ASSERT_EQ(report["results"].size(), 2u);
  for (const auto& r : report["results"]) {
    EXPECT_EQ(r["status"], "ok") << r["params"].dump() << " " << r["check"].dump();
  }
  const auto& tk = report["results"][1]["metrics"];
  EXPECT_LT(tk["rel_error_vs_cublaslt"].get<double>(), 1e-2);
  // Measured on the H200: 1.11 at --quick's 2048^3, 1.00-1.03 at 4096^3 and 8192^3 (results/h200/suite.json);
  // 10% below parity is a regression.
  EXPECT_GE(tk["ratio_vs_cublaslt"]["median"].get<double>(), 0.90) << "the DSL's GEMM fell behind cuBLASLt";
  // compare judges the paired ratio; cuBLASLt's own row is a peer's, never judged.
  EXPECT_EQ(report["results"][1]["primary"], "ratio_vs_cublaslt");
  EXPECT_EQ(report["results"][0].value("peer", false), true);
  EXPECT_EQ(tk["tflops"]["n"], tk["ratio_vs_cublaslt"]["n"]) << "the TFLOP/s come from the paired samples";
}

TEST(Gemm, WithoutItsPeerTheHostChecksTheProduct) {
  const Json report = run_probe("gemm", {"--no-peer"});
  ASSERT_EQ(report["results"].size(), 1u);
  const auto& r = report["results"][0];
  EXPECT_EQ(r["status"], "ok") << r["check"].dump();
  EXPECT_EQ(r["params"]["kernel"], "tk");
  EXPECT_EQ(r["params"]["timed"], "alone");
  EXPECT_LT(r["metrics"]["spot_error_vs_host"].get<double>(), 1e-2);
}

// Filler work after every wgmma: each row's product still checks, no filler makes the tensor cores
// faster than without, and one warpgroup's few instructions per wgmma hide under it. Not yet run on
// the H200: the bounds below are what the wgmma probe measured without filler, not this probe.
TEST(Overlap, FillerWorkCostsTensorThroughputOnlyBeyondABudget) {
  const Json report = run_probe("overlap", {"--warpgroups", "1"});
  ASSERT_EQ(expect_all_correct(report), 1 + 2 * 6u) << "none, then fma and ex2 at 1..32 per wgmma (--quick)";
  double plain = 0;
  for (const auto& r : report["results"]) {
    const double pct = median(r, "pct_clock_peak");
    if (r["params"]["filler"] == "none") {
      plain = pct;
      EXPECT_GE(pct, kMinOccupancyWgmmaPctClock) << "one warpgroup, as the occupancy probe measures it";
      continue;
    }
    EXPECT_LE(pct, plain * 1.02) << r["params"].dump() << ": filler cannot speed the tensor cores up";
    if (r["params"]["per_wgmma"] == 1) {
      EXPECT_GE(pct, 0.9 * plain) << "one instruction per 128-cycle wgmma";
    }
  }
  EXPECT_EQ(report["findings"].size(), 2u) << "one per filler";
}
