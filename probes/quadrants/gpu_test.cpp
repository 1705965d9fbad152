// quadrants on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::median;
using gpu_fixtures::run_probe;
using tkprobe::Json;

// One warp issues at most one FFMA a cycle to its quadrant's 32 lanes; the SM has four quadrants. The
// bounds are the architecture's (32 lanes a quadrant), not a measurement.
TEST(Quadrants, EachQuadrantIssuesThirtyTwoLanesACycle) {
  const Json report = run_probe("quadrants");
  ASSERT_EQ(report["results"].size(), 5u) << "--quick: 1, 2, 3, 4 and 8 warps";
  for (const auto& r : report["results"]) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    const double lanes = median(r, "fma_lanes_per_clock"), ideal = r["metrics"]["ideal_if_spread"];
    EXPECT_LE(lanes, 1.02 * ideal) << r["params"].dump() << ": more than the quadrants can issue";
    EXPECT_GE(lanes, 0.75 * ideal) << r["params"].dump();
    EXPECT_EQ(r["metrics"]["blocks_per_sm"], 1);
  }
}
