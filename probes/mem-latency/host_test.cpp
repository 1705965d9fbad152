// mem-latency's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, MemLatencyRefusesAnEmptyFootprint) {
  const auto footprint = run({"mem-latency", "--footprint", "0"});
  EXPECT_EQ(footprint.code, 2);
  EXPECT_TRUE(mentions(footprint.err, "--footprint 0: give KiB from 16")) << footprint.err;
}

TEST(Cli, MemLatencyFootprintsOutsideSixteenKibToFourGibAreRefused) {
  for (const char* footprint : {"8", "4194305"}) {
    const auto r = run({"mem-latency", "--footprint", footprint});
    EXPECT_EQ(r.code, 2) << footprint;
    EXPECT_TRUE(mentions(r.err, "give KiB from 16 to 4194304")) << r.err;
  }
}
