// info on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::run_probe;
using tkprobe::Json;

TEST(Info, DescribesTheDevice) {
  const Json report = run_probe("info");
  const auto& r = report["results"][0];
  EXPECT_GT(r["metrics"]["sms"].get<int>(), 0);
  EXPECT_GT(report["device"]["l2_bytes"].get<long long>(), 0);
  EXPECT_FALSE(report["device"]["name"].get<std::string>().empty());
}
