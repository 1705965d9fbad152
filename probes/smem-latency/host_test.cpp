// smem-latency's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, SmemLatencyRefusesStridesOffFourBytesAndFootprintsOutOfRange) {
  const auto latency = run({"smem-latency", "--stride", "0"});
  EXPECT_EQ(latency.code, 2);
  EXPECT_TRUE(mentions(latency.err, "multiple of 4")) << latency.err;
  EXPECT_EQ(run({"smem-latency", "--stride", "6"}).code, 2);
  EXPECT_EQ(run({"smem-latency", "--footprint", "0"}).code, 2);
  EXPECT_EQ(run({"smem-latency", "--footprint", "201"}).code, 2);
}
