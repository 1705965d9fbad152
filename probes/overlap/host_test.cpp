// overlap's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, OverlapRefusesUnknownFillersAndTooManyWarpgroups) {
  const auto filler = run({"overlap", "--filler", "fma,sin"});
  EXPECT_EQ(filler.code, 2);
  EXPECT_TRUE(mentions(filler.err, "--filler")) << filler.err;
  EXPECT_EQ(run({"overlap", "--warpgroups", "4"}).code, 2);
}
