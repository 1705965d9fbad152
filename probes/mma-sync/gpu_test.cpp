// mma-sync on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include "probes/timed_kernels/mma_sync_kernels.hpp"
#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::run_probe;
using tkprobe::Json;

TEST(MmaSync, EveryTypeComputesTheRightProductAndRegistersLimitResidency) {
  const Json report =
      run_probe("mma-sync", {"--dtype", "bf16,fp16,tf32,e4m3,s8", "--ilp", "1,8", "--warps-per-sm", "4,64"});
  // e4m3's kernels are built for sm_90a alone: a PTX-only build or another GPU skips its rows, saying so.
  const std::string e4m3_why =
      gpu_fixtures::why_not_here(tkprobe::tensor::mma_sync_needs(tkprobe::tensor::DType::e4m3));
  int full_and_deep = 0;  // ILP 8 at 64 warps: 32 accumulator registers alone exceed the 32 each thread may have
  for (const auto& r : report["results"]) {
    const bool deep_and_full = r["params"]["ilp"] == 8 && r["params"]["warps_per_sm"] == 64;
    if (r["params"]["dtype"] == "e4m3" && !e4m3_why.empty()) {
      EXPECT_EQ(r["status"], "skipped") << r.dump();
      EXPECT_EQ(r["reason"], e4m3_why) << r.dump();
      continue;
    }
    if (r["status"] == "skipped") {
      EXPECT_NE(r["reason"].get<std::string>().find("registers/thread"), std::string::npos) << r.dump();
      full_and_deep += deep_and_full;
      continue;
    }
    EXPECT_FALSE(deep_and_full) << r.dump();
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_TRUE(r["check"]["passed"].get<bool>()) << r["params"].dump();
  }
  EXPECT_EQ(full_and_deep, e4m3_why.empty() ? 5 : 4);
}
