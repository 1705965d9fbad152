// wgmma's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

// With --devices, the probe's own options are checked first, before any device work.
TEST(Cli, WgmmaChecksItsShapeBeforeAnyDevice) {
  EXPECT_EQ(run({"wgmma", "--devices", "0,1", "--shape", "7x7"}).code, 2);
}
