// tma-swizzle's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, TmaSwizzleRefusesModesAndBoxesTheTmaCannotTake) {
  const auto mode = run({"tma-swizzle", "--mode", "16B"});
  EXPECT_EQ(mode.code, 2);
  EXPECT_TRUE(mentions(mode.err, "give none, 32B, 64B, 128B or all")) << mode.err;
  const auto span = run({"tma-swizzle", "--mode", "128B", "--box", "64x128"});
  EXPECT_EQ(span.code, 2);
  EXPECT_TRUE(mentions(span.err, "128B swizzle needs the inner extent (128 x 2 B = 256 B) <= 128 B")) << span.err;
  EXPECT_EQ(run({"tma-swizzle", "--box", "8x3", "--mode", "none"}).code, 2);
  EXPECT_EQ(run({"tma-swizzle", "--box", "0x8"}).code, 2);
  EXPECT_EQ(run({"tma-swizzle", "--dtype", "fp64"}).code, 2);
}
