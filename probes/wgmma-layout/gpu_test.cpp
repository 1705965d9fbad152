// wgmma-layout on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::run_probe;
using tkprobe::Json;

TEST(WgmmaLayout, EveryOperandMapAndTheAccumulatorsMatchTheModel) {
  const Json report = run_probe("wgmma-layout", {});
  // accumulators, A from registers x 2 majors, (A, B) x 2 majors x 4 modes x (packed, spread),
  // and 7 unaligned starts x 2 base offsets.
  ASSERT_EQ(report["results"].size(), 1 + 2 + 2 * 2 * 4 * 2 + 7 * 2u);
  for (const auto& r : report["results"]) {
    EXPECT_EQ(r["status"], "ok") << r["params"].dump() << " " << r["check"].dump();
    EXPECT_EQ(r["metrics"]["mismatches_vs_model"], 0) << r["params"].dump();
  }
}
