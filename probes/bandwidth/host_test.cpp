// bandwidth's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, BandwidthRefusesSizesAndLevelsItCannotRun) {
  for (const char* bad : {"1", "100000000"}) {
    const auto size = run({"bandwidth", "--size", bad});
    EXPECT_EQ(size.code, 2) << bad;
    EXPECT_TRUE(mentions(size.err, "give 64 to 32768 MiB")) << size.err;
  }
  const auto level = run({"bandwidth", "--level", "hbm,dram"});
  EXPECT_EQ(level.code, 2);
  EXPECT_TRUE(mentions(level.err, "--level")) << level.err;
}
