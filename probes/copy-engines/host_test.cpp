// copy-engines's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, CopyEnginesRefusesBoxesTheTmaOrTheSwizzleCannotTake) {
  for (const char* box : {"64by64", "0x64", "64x0", "257x64", "64x512"}) {
    const auto r = run({"copy-engines", "--box", box});
    EXPECT_EQ(r.code, 2) << box;
    EXPECT_TRUE(mentions(r.err, "give ROWSxCOLS in bf16 elements, each from 1 to 256 (the TMA's box limit)")) << r.err;
  }
  for (const char* box : {"64x128", "64x32", "64x12"}) {
    const auto span = run({"copy-engines", "--box", box});
    EXPECT_EQ(span.code, 2) << box;
    EXPECT_TRUE(mentions(span.err, "must be the 128B swizzle's span, 128 B (COLS = 64)")) << span.err;
  }
  const auto atom = run({"copy-engines", "--box", "4x64"});
  EXPECT_EQ(atom.code, 2);
  EXPECT_TRUE(mentions(atom.err, "give ROWS a multiple of 8")) << atom.err;
  EXPECT_EQ(run({"copy-engines", "--box", "64x64,64x72"}).code, 2) << "every box in the list is checked";
}

TEST(Cli, CopyEnginesRefusesZeroCtasPerSmAndUnknownEngines) {
  const auto ctas = run({"copy-engines", "--ctas-per-sm", "1,0"});
  EXPECT_EQ(ctas.code, 2);
  EXPECT_TRUE(mentions(ctas.err, "--ctas-per-sm 0: give CTAs per SM from 1 to 32")) << ctas.err;
  const auto engine = run({"copy-engines", "--engine", "dma"});
  EXPECT_EQ(engine.code, 2);
  EXPECT_TRUE(mentions(engine.err, "--engine dma: give tma, cp-async, warp or all")) << engine.err;
}
