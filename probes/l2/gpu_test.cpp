// l2 on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::median;
using gpu_fixtures::run_probe;
using tkprobe::Json;

// The L2 from every SM. On the H200 (180acf5): 132 SMs mapped, every SM's median 256-309 cycles, two
// halves of SMs reaching their own half of the lines in 276 cycles and the other in 308; the stream of
// the whole map 9.3 TB/s. One block ran on each SM; a dependent L2 hit costs between L1's ~32 cycles
// and HBM's ~700 (mem-latency); near below far in every group found; streams between HBM's floor and
// shared memory's 33 TB/s. The ladder (--quick: a quarter, three quarters and one and a half of the
// L2): the smallest footprint an L2 hit, the largest slower (a third of it cannot fit).
TEST(L2, EverySmMapsTheLinesAndTheLevelsAreL2Hits) {
  const Json report = run_probe("l2");
  int maps = 0, groups = 0;
  std::vector<double> ladder;
  for (const auto& r : report["results"]) {
    const std::string test = r["params"]["test"];
    if (test != "bandwidth" || r["status"] != "skipped") {
      EXPECT_EQ(r["status"], "ok") << r.dump();
    }
    if (test == "map") {
      ++maps;
      EXPECT_GE(r["metrics"]["sms"].get<int>(), 100);
      EXPECT_GT(r["metrics"]["sm_median_least_cycles"].get<double>(), 150) << r.dump();
      EXPECT_LT(r["metrics"]["sm_median_most_cycles"].get<double>(), 450) << r.dump();
      groups = r["metrics"]["groups"];
    } else if (test == "partition") {
      const double near = median(r, "near_cycles"), far = median(r, "far_cycles");
      EXPECT_GT(near, 100) << r.dump();
      EXPECT_LT(near, far) << r.dump();
      EXPECT_LT(far, 700) << r.dump();
    } else if (test == "latency") {
      ladder.push_back(median(r, "latency_cycles"));
      EXPECT_GT(ladder.back(), 150) << r.dump();
      EXPECT_LT(ladder.back(), 1200) << r.dump();
    } else if (r["status"] == "ok") {  // the map's streams and the ladder's
      EXPECT_GT(median(r, "tbps"), 1) << r.dump();
      EXPECT_LT(median(r, "tbps"), 33) << r.dump();
    }
  }
  EXPECT_EQ(maps, 1);
  ASSERT_EQ(ladder.size(), 3u);
  EXPECT_LT(ladder.front(), 450) << "a quarter of the L2 is held in it";
  EXPECT_GT(ladder.back(), ladder.front()) << "one and a half L2s cannot all be held";
  EXPECT_EQ(report["results"].size(), 1u + groups + 3 + 2 * 3) << "the map, a row per group, three streams, the ladder";
}
