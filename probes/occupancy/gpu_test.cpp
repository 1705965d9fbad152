// occupancy on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::kMinOccupancyWgmmaPctClock;
using gpu_fixtures::median;
using gpu_fixtures::run_probe;
using tkprobe::Json;

TEST(Occupancy, SweepsResidencyUntilItNoLongerFits) {
  const Json report = run_probe("occupancy", {});
  // wgmma exists on sm_90a alone: elsewhere, or in a PTX-only build, its sweep is one skipped row saying why.
  const std::string wgmma_why = gpu_fixtures::why_not_here(tkprobe::kWgmmaNeeds);
  std::map<std::string, int> rows;
  for (const auto& r : report["results"]) {
    if (r["params"]["kernel"] == "wgmma" && !wgmma_why.empty()) {
      EXPECT_EQ(r["reason"], wgmma_why) << r.dump();
      continue;
    }
    if (r["status"] == "skipped") continue;
    EXPECT_TRUE(r["check"]["passed"].get<bool>()) << r["params"].dump();
    const std::string kernel = r["params"]["kernel"];
    rows[kernel]++;
    const auto& m = r["metrics"];
    EXPECT_NEAR(m["occupancy_pct"].get<double>(), 100.0 * m["warps_per_sm"].get<int>() / 64, 1e-9);
    // Residency from the blocks' own spans, not the occupancy API's promise: every block ran at once.
    constexpr int kTensorBlockWarps = 4;  // mma.sync's blocks are 4 warps, wgmma's one warpgroup
    const int asked =
        kernel == "stream" ? r["params"]["blocks_per_sm"].get<int>() : m["warps_per_sm"].get<int>() / kTensorBlockWarps;
    EXPECT_EQ(m["concurrent_blocks_per_sm"].get<int>(), asked) << r["params"].dump();
    if (kernel == "wgmma") {  // --quick on the H200: 94.2% with one warpgroup, 97-98% with more
      EXPECT_GE(median(r, "pct_clock_peak"), kMinOccupancyWgmmaPctClock) << r["params"].dump();
    }
  }
  for (const auto& f : report["findings"]) {
    EXPECT_NE(f["text"].get<std::string>().find(" 0 of "), std::string::npos) << "every row ran in one wave: " << f;
  }
  EXPECT_GE(rows["mma.sync"], 12) << "4-warp blocks, 1 to 16 per SM until registers run out";
  if (wgmma_why.empty()) {
    EXPECT_GE(rows["wgmma"], 2) << "at least two 64x256 warpgroups fit";
  }
  EXPECT_EQ(rows["stream"], 8) << "256-thread blocks, 1 to 8 per SM";
  EXPECT_EQ(report["findings"].size(), wgmma_why.empty() ? 3u : 2u);
}
