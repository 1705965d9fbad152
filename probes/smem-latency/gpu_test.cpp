// smem-latency on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::median;
using gpu_fixtures::run_probe;
using tkprobe::Json;

// The H200 (results/h200/suite.json): 23.0 cycles when the word holds the next address, 29.0 when it
// holds an index, for every stride and the random cycle; within 10%.
TEST(SmemLatency, DependentLoadCostsAboutThirtyCycles) {
  const Json report = run_probe("smem-latency");
  ASSERT_GE(report["results"].size(), 2u);
  const double max_mhz = report["device"]["sm_clock_max_mhz"];
  for (const auto& r : report["results"]) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    const double expected = r["params"]["address"] == "indexed" ? 29.0 : 23.0;
    EXPECT_NEAR(median(r, "latency_cycles"), expected, 0.10 * expected) << r["params"].dump();
    const double mhz = r["telemetry"]["kernel_sm_clock_mhz"];
    EXPECT_GE(mhz, gpu_fixtures::kMinLoadedClockShare * max_mhz);
    EXPECT_LE(mhz, gpu_fixtures::kClockAgreement * max_mhz);
  }
}
