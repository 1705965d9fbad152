// overlap on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::expect_all_correct;
using gpu_fixtures::kMinOccupancyWgmmaPctClock;
using gpu_fixtures::median;
using gpu_fixtures::run_probe;
using tkprobe::Json;

// Filler work after every wgmma: each row's product still checks, no filler makes the tensor cores
// faster than without, and one warpgroup's few instructions per wgmma hide under it. The bounds are
// what one warpgroup reaches without filler (kMinOccupancyWgmmaPctClock).
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
