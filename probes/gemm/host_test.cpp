// gemm's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, GemmRefusesShapesOffItsTileAndPartialShapes) {
  const auto off = run({"gemm", "--m", "1000", "--n", "256", "--k", "64"});
  EXPECT_EQ(off.code, 2);
  EXPECT_TRUE(mentions(off.err, "M = 1000: give a positive multiple of 128 (the kernel's tile)")) << off.err;
  const auto k = run({"gemm", "--m", "128", "--n", "256", "--k", "100"});
  EXPECT_EQ(k.code, 2);
  EXPECT_TRUE(mentions(k.err, "K = 100: give a positive multiple of 64")) << k.err;
  const auto partial = run({"gemm", "--m", "128"});
  EXPECT_EQ(partial.code, 2);
  EXPECT_TRUE(mentions(partial.err, "give all three")) << partial.err;
}
