// smem-banks's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, SmemBanksRefusesStridesWidthsAndWarpsItCannotRun) {
  const auto banks = run({"smem-banks", "--stride", "0"});
  EXPECT_EQ(banks.code, 2);
  EXPECT_TRUE(mentions(banks.err, "--stride 0: give strides from 1 to 64")) << banks.err;
  EXPECT_EQ(run({"smem-banks", "--width", "3"}).code, 2);
  EXPECT_EQ(run({"smem-banks", "--warps", "0"}).code, 2);
  EXPECT_EQ(run({"smem-banks", "--warps", "33"}).code, 2);
}
