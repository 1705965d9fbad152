// wgmma on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include <utility>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::expect_all_correct;
using gpu_fixtures::expect_consistent_clock_peak;
using gpu_fixtures::find_row;
using gpu_fixtures::kMaxPctClock;
using gpu_fixtures::kMinWgmmaPctClock;
using gpu_fixtures::median;
using gpu_fixtures::run_probe;
using tkprobe::Json;

TEST(Wgmma, EveryShapeTypeAndASourceComputesTheRightProduct) {
  // 32 N x 2 A sources for five types, 18 N x 2 for s8.
  EXPECT_EQ(expect_all_correct(run_probe("wgmma", {"--sweep", "--dtype", "bf16,fp16,tf32,e4m3,e5m2,s8", "--warpgroups",
                                                   "1", "--min-time", "0.001"})),
            5 * 64 + 36u);
  EXPECT_EQ(expect_all_correct(run_probe("wgmma", {"--sweep", "--dtype", "fp16,e4m3,e5m2", "--acc", "f16",
                                                   "--warpgroups", "1", "--min-time", "0.001"})),
            3 * 64u);
}

// 64x256 tiles reach the clock peak for bf16 and e4m3 (fp8 at twice bf16's rate per clock).
TEST(Wgmma, LargestTilesReachTheClockPeak) {
  const Json report = run_probe("wgmma", {"--dtype", "bf16,e4m3", "--shape", "64x256"});
  for (const auto& [dtype, rate] : {std::pair{"bf16", 1.0}, std::pair{"e4m3", 2.0}}) {
    const Json* r = find_row(report, {{"dtype", dtype}});
    ASSERT_NE(r, nullptr) << dtype;
    EXPECT_GE(median(*r, "pct_clock_peak"), kMinWgmmaPctClock) << r->dump();
    EXPECT_LE(median(*r, "pct_clock_peak"), kMaxPctClock) << r->dump();
    expect_consistent_clock_peak(report, *r, "tflops", "pct_clock_peak", rate);
  }
}
