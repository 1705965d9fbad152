// smem-banks on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::median;
using gpu_fixtures::run_probe;
using tkprobe::Json;

// Against the bank model (probes/smem-banks/bank_model.hpp), which the H200's figures match within 1%
// for every stride and width (results/h200/suite.json): within 10% here.
constexpr double kModelAgreement = 0.10;

TEST(SmemBanks, ConflictsCostWhatTheBankModelSays) {
  const Json report = run_probe("smem-banks");
  int strided = 0, ldmatrix = 0;
  for (const auto& r : report["results"]) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    const auto& p = r["params"];
    if (p["warps"] != 32) continue;
    const double model = r["metrics"]["model_ways"], measured = r["metrics"]["measured_ways"];
    EXPECT_NEAR(measured / model, 1.0, kModelAgreement) << p.dump();
    if (p["access"] == "ld.shared") {
      ++strided;
      // Conflict-free: 32 lanes x width bytes at 128 bytes a clock.
      if (p["stride"] == 1) {
        EXPECT_NEAR(median(r, "cycles_per_access"), p["width_bytes"].get<double>() / 4, 0.1);
      }
    } else {
      ++ldmatrix;  // both layouts against the conflict-free 16-byte load: the model says 8-way and 1-way
    }
  }
  EXPECT_EQ(strided, 3 * 9) << "--quick: 3 widths x 9 strides";
  EXPECT_EQ(ldmatrix, 2);
  // One warp alone cannot fill the pipe (4.47 cycles conflict-free where the full SM needs 1), so a
  // 32-way conflict shows as ~14x (64.5 cycles), not 32x.
  const auto single = [&](int stride) {
    for (const auto& r : report["results"])
      if (r["params"].value("warps", 0) == 1 && r["params"].value("stride", 0) == stride)
        return median(r, "cycles_per_access");
    ADD_FAILURE() << "no single-warp row for stride " << stride;
    return 1.0;
  };
  EXPECT_NEAR(single(1), 4.47, 0.45);
  EXPECT_NEAR(single(32) / single(1), 14.4, 1.5);
}

TEST(SmemBanks, FewerWarpsRunWithoutChecksThatAssumeAFullSm) {
  const Json report = run_probe("smem-banks", {"--warps", "8", "--width", "4", "--stride", "1", "32"});
  for (const auto& r : report["results"]) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_FALSE(r.contains("check")) << "the bounds assume the pipe is the limit: " << r.dump();
  }
}
