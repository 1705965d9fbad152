// decode on a real GPU, through the real command line: the ceiling row checked, every step checked
// against the fp32 reference with the forward's bounds, its share of the ceiling its own GB/s, its
// SM clock measured; the batch-1 fit of a step's fixed cost and rate in a finding.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/gpu/gpu_fixtures.hpp"
#include "tests/gpu/kernel_bounds.hpp"

using kernel_bounds::attention_forward::kMaxLseError;
using kernel_bounds::attention_forward::kMaxRelError;
using kernel_bounds::attention_forward::kMaxRowError;

TEST(DecodeProbe, QuickRunPassesItsChecks) {
  const auto report = gpu_fixtures::run_probe("decode");
  ASSERT_EQ(report["results"].size(), 5u) << "--quick: the ceiling and four steps (three bf16 caches, one e4m3)";
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
  EXPECT_EQ(report["results"][4]["params"]["cache"], "e4m3");
  ASSERT_EQ(report["findings"].size(), 5u) << "a step's each, then the batch-1 fit's";
  // The two batch-1 bf16 steps, fitted: a step's fixed cost (a launch, the first loads' latency, the
  // combine) some microseconds, its read rate near the ceiling.
  const std::string fit = report["findings"][4]["text"];
  std::smatch m;
  ASSERT_TRUE(std::regex_search(fit, m,
                                std::regex(R"(B=1 bf16: over 2 lengths, a step costs ([0-9.]+) us plus its )"
                                           R"(cache read at ([0-9]+) GB/s)")))
      << fit;
  EXPECT_GT(std::stod(m[1]), 1) << fit;
  EXPECT_LT(std::stod(m[1]), 50) << fit;
  EXPECT_GT(std::stod(m[2]), 0.7 * ceiling_gbps) << fit;
  EXPECT_LT(std::stod(m[2]), 1.3 * ceiling_gbps) << fit;
}
