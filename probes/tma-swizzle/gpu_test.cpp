// tma-swizzle on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::run_probe;
using tkprobe::Json;

TEST(TmaSwizzle, EveryModeAndTypeLandsWhereTheModelSays) {
  for (const char* dtype : {"bf16", "fp32", "fp8"}) {
    const Json report = run_probe("tma-swizzle", {"--dtype", dtype});
    ASSERT_EQ(report["results"].size(), 4u) << dtype;
    for (const auto& r : report["results"]) {
      EXPECT_EQ(r["status"], "ok") << r["params"].dump() << " " << r["metrics"].dump();
      EXPECT_EQ(r["metrics"]["mismatches_vs_model"], 0) << r["params"].dump();
      EXPECT_NE(r["metrics"]["driver_limit"].get<std::string>().find("CUDA_ERROR"), std::string::npos)
          << "the driver refuses a box past the mode's limit: " << r["metrics"].dump();
    }
    const auto& b128 = report["results"][3];
    EXPECT_EQ(b128["metrics"]["rule"], "bits 4-6 ^= bits 7-9 (16-byte chunk ^= 128-byte line mod 8)");
    EXPECT_EQ(b128["metrics"]["pattern_repeat_bytes"], 1024);
  }
}

TEST(TmaSwizzle, BoxesNarrowerThanTheSpanTakeTheWholeSpanPerRow) {
  for (const auto& [mode, box, pitch] : {std::tuple{"128B", "64x32", 128}, std::tuple{"64B", "32x16", 64}}) {
    const Json report = run_probe("tma-swizzle", {"--mode", mode, "--box", box});
    ASSERT_EQ(report["results"].size(), 1u);
    const auto& r = report["results"][0];
    EXPECT_EQ(r["status"], "ok") << r["metrics"].dump();
    EXPECT_EQ(r["metrics"]["mismatches_vs_model"], 0) << mode;
    EXPECT_EQ(r["metrics"]["row_pitch_bytes"], pitch) << mode << " " << box;
  }
}
