// l2's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, L2RefusesAMapIntoAMissingFolder) {
  const auto map = run({"l2", "--map", "/no/such/folder/map.csv"});
  EXPECT_EQ(map.code, 2);
  EXPECT_TRUE(mentions(map.err, "the folder /no/such/folder does not exist")) << map.err;
}
