// occupancy's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, OccupancyRefusesUnknownKernels) {
  const auto kernel = run({"occupancy", "--kernel", "memcpy"});
  EXPECT_EQ(kernel.code, 2);
  EXPECT_TRUE(mentions(kernel.err, "--kernel")) << kernel.err;
}
