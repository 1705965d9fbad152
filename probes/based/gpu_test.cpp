// based on a real GPU, through the real command line: the row checked against the fp32 reference
// with the kernel's bounds, and rated consistently with the clock peak.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_fixtures.hpp"
#include "tests/gpu/kernel_bounds.hpp"

using kernel_bounds::based_forward::kMaxRelError;
using kernel_bounds::based_forward::kMaxRowError;

TEST(BasedProbe, QuickRunPassesItsChecks) {
  const auto report = gpu_fixtures::run_probe("based");
  ASSERT_EQ(report["results"].size(), 1u) << "--quick: one small shape";
  for (const auto& r : report["results"]) {
    SCOPED_TRACE(r["params"].dump());
    ASSERT_EQ(r["status"], "ok") << r.value("reason", "") << " " << r["check"].dump();
    EXPECT_LT(r["metrics"]["rel_error"].get<double>(), kMaxRelError);
    EXPECT_LT(r["metrics"]["worst_row_error"].get<double>(), kMaxRowError);
    EXPECT_EQ(r["primary"], "pct_clock_peak");
    const double pct = gpu_fixtures::median(r, "pct_clock_peak");
    const double mhz = r["telemetry"]["kernel_sm_clock_mhz"];
    const double peak_at_clock =
        gpu_fixtures::kDenseBf16FlopPerSmPerClock * report["device"]["sms"].get<double>() * mhz * 1e6;
    EXPECT_NEAR(pct, 100 * gpu_fixtures::median(r, "tflops") * 1e12 / peak_at_clock, 0.03 * pct);
    EXPECT_GT(pct, 0);
    EXPECT_LT(pct, 100);
  }
  EXPECT_EQ(report["findings"].size(), 1u);
}
