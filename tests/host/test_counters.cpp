// measure_counters where there is no GPU (this machine, CI): every metric unavailable, with a
// reason, and `launch` never run.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "src/counters.hpp"

TEST(Counters, WithoutAGpuEveryMetricIsUnavailableWithAReason) {
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) GTEST_SKIP() << "a GPU is present: tests/gpu covers it";
  int launches = 0;
  const auto values =
      tkprobe::measure_counters({tkprobe::kWarpInstructionsIssued, "no_such__metric.sum"}, [&] { ++launches; });
  ASSERT_EQ(values.size(), 2u);
  for (const auto& value : values) {
    EXPECT_FALSE(value.available);
    EXPECT_EQ(value.value, 0);
    EXPECT_NE(value.reason.find("no CUDA device"), std::string::npos) << value.reason;
  }
  EXPECT_EQ(launches, 0);
}

TEST(Counters, NoMetricsNoValues) {
  EXPECT_TRUE(tkprobe::measure_counters({}, [] {}).empty());
}
