// quadrants's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, QuadrantsRefusesZeroWarps) {
  const auto warps = run({"quadrants", "--warps", "0"});
  EXPECT_EQ(warps.code, 2);
  EXPECT_TRUE(mentions(warps.err, "--warps")) << warps.err;
}
