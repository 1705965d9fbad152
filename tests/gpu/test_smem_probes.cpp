// The shared-memory probes on a real GPU: they run through the real command line, write
// reports that match the schema, and their figures land where the hardware allows.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/gpu/gpu_fixtures.hpp"

using tkprobe::Json;

using gpu_fixtures::median;
using gpu_fixtures::run_probe;

TEST(SmemLatency, DependentLoadCostsAboutThirtyCycles) {
  const Json report = run_probe("smem-latency");
  ASSERT_GE(report["results"].size(), 2u);
  for (const auto& r : report["results"]) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    const double cycles = median(r, "latency_cycles");
    EXPECT_GE(cycles, 20) << r["params"].dump();
    EXPECT_LE(cycles, 45) << r["params"].dump();
    EXPECT_GT(r["metrics"]["latency_ns"].get<double>(), 0);
    EXPECT_GT(r["telemetry"]["kernel_sm_clock_mhz"].get<double>(), 500);
  }
}

TEST(SmemBanks, ConflictsCostWhatTheBankModelSays) {
  const Json report = run_probe("smem-banks");
  bool saw_32_way = false, saw_ldmatrix = false;
  for (const auto& r : report["results"]) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    const auto& p = r["params"];
    const double cycles = median(r, "cycles_per_access");
    if (p["access"] == "ld.shared" && p["width_bytes"] == 4 && p["warps"] == 32) {
      const double model = r["metrics"]["model_ways"], measured = r["metrics"]["measured_ways"];
      EXPECT_NEAR(measured / model, 1.0, 0.25) << p.dump();
      if (p["stride"] == 1) {
        EXPECT_LE(cycles, 2.5) << "a conflict-free warp access is pipe-bound";
      }
      if (model == 32) {
        saw_32_way = true;
        EXPECT_GE(measured, 16) << p.dump();
      }
    }
    if (p["access"] == "ldmatrix.x4" && p["layout"] == "8x128B rows, unswizzled") {
      saw_ldmatrix = true;
      EXPECT_GE(r["metrics"]["measured_ways"].get<double>(), 4);
    }
  }
  EXPECT_TRUE(saw_32_way);
  EXPECT_TRUE(saw_ldmatrix);
  // Even one warp pays something for a conflict.
  const auto& results = report["results"];
  const auto single = [&](int stride) {
    for (const auto& r : results)
      if (r["params"].value("warps", 0) == 1 && r["params"].value("stride", 0) == stride)
        return median(r, "cycles_per_access");
    ADD_FAILURE() << "no single-warp row for stride " << stride;
    return 1.0;
  };
  EXPECT_GT(single(32), single(1));
}

TEST(Info, DescribesTheDevice) {
  const Json report = run_probe("info");
  const auto& r = report["results"][0];
  EXPECT_GT(r["metrics"]["sms"].get<int>(), 0);
  EXPECT_GT(report["device"]["l2_bytes"].get<long long>(), 0);
  EXPECT_FALSE(report["device"]["name"].get<std::string>().empty());
}

TEST(Compare, ARealReportMatchesItself) {
  const auto dir = fixtures::temp_dir("gpu-compare");
  const auto path = dir / "r.json";
  ASSERT_EQ(fixtures::run({"smem-latency", "--quick", "--json", path.string()}).code, 0);
  const auto r = fixtures::run({"compare", path.string(), path.string()});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("slower"), std::string::npos);
}
