// mem-latency on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::median;
using gpu_fixtures::run_probe;
using tkprobe::Json;

// The H200 (results/h200/suite.json): 32 cycles from L1 (16 KiB), 275-277 from L2
// (4 MiB), 647-668 from HBM (256 MiB, flushed); within 10%.
TEST(MemLatency, LadderFromL1ToHbm) {
  const Json report = run_probe("mem-latency", {});  // --quick: 16 KiB, 4 MiB, 256 MiB
  ASSERT_EQ(report["results"].size(), 3u);
  for (const auto& r : report["results"]) EXPECT_EQ(r["status"], "ok") << r.dump();
  const double expected[] = {32, 276, 658};
  for (int level = 0; level < 3; ++level) {
    EXPECT_NEAR(median(report["results"][level], "latency_cycles"), expected[level], 0.10 * expected[level])
        << report["results"][level]["params"].dump();
  }
  EXPECT_EQ(report["results"][2]["params"]["cache_state"], "flushed");
}
