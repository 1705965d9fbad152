// wgmma-layout's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, WgmmaLayoutRefusesUnknownModesMajorsAndTypes) {
  const auto mode = run({"wgmma-layout", "--swizzle", "16B"});
  EXPECT_EQ(mode.code, 2);
  EXPECT_TRUE(mentions(mode.err, "--swizzle 16B: give none, 32B, 64B, 128B or all")) << mode.err;
  const auto major = run({"wgmma-layout", "--major", "row"});
  EXPECT_EQ(major.code, 2);
  EXPECT_TRUE(mentions(major.err, "--major row: give k, mn or all")) << major.err;
  const auto dtype = run({"wgmma-layout", "--dtype", "fp16"});
  EXPECT_EQ(dtype.code, 2);
  EXPECT_TRUE(mentions(dtype.err, "only bf16 is decoded")) << dtype.err;
}
