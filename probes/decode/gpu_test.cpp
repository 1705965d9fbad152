// decode on a real GPU, through the real command line: the ceiling row checked, every step checked
// against the fp32 reference with the forward's bounds, its share of the ceiling its own GB/s, its
// SM clock measured.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_fixtures.hpp"
#include "tests/gpu/kernel_bounds.hpp"

using kernel_bounds::attention_forward::kMaxLseError;
using kernel_bounds::attention_forward::kMaxRelError;
using kernel_bounds::attention_forward::kMaxRowError;

TEST(DecodeProbe, QuickRunPassesItsChecks) {
  const auto report = gpu_fixtures::run_probe("decode");
  ASSERT_EQ(report["results"].size(), 4u) << "--quick: the ceiling and three steps (two bf16 caches, one e4m3)";
  const auto& ceiling = report["results"][0];
  ASSERT_EQ(ceiling["status"], "ok") << ceiling["check"].dump();
  const double ceiling_gbps = gpu_fixtures::median(ceiling, "gbps");
  EXPECT_GT(ceiling_gbps, 1000) << "an HBM read under 1 TB/s on a data-centre GPU";
  EXPECT_FALSE(ceiling["params"].contains("loads_in_flight")) << "which read won is the run's finding, not a name";
  const int in_flight = ceiling["metrics"]["loads_in_flight"];
  EXPECT_TRUE(in_flight == 4 || in_flight == 8) << in_flight;
  for (std::size_t i = 1; i < report["results"].size(); ++i) {
    const auto& r = report["results"][i];
    SCOPED_TRACE(r["params"].dump());
    ASSERT_EQ(r["status"], "ok") << r.value("reason", "") << " " << r["check"].dump();
    EXPECT_LT(r["metrics"]["rel_error"].get<double>(), kMaxRelError);
    EXPECT_LT(r["metrics"]["worst_row_error"].get<double>(), kMaxRowError);
    EXPECT_LT(r["metrics"]["lse_error"].get<double>(), kMaxLseError);
    EXPECT_EQ(r["primary"], "pct_hbm_ceiling");
    const double pct = gpu_fixtures::median(r, "pct_hbm_ceiling");
    EXPECT_NEAR(pct, 100 * gpu_fixtures::median(r, "gbps") / ceiling_gbps, 1e-3 * pct);
    EXPECT_GT(pct, 0);
    EXPECT_GT(r["telemetry"].value("kernel_sm_clock_mhz", 0.0), 0) << "each step's SM clock, bracketed";
  }
  EXPECT_EQ(report["results"][3]["params"]["cache"], "e4m3");
  EXPECT_EQ(report["findings"].size(), 3u);
}
