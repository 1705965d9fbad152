// cluster's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, ClusterRefusesSizesOutsideTwoToSixteen) {
  for (const char* size : {"1", "17"}) {
    const auto sizes = run({"cluster", "--sizes", size});
    EXPECT_EQ(sizes.code, 2) << size;
    EXPECT_TRUE(mentions(sizes.err, "--sizes")) << sizes.err;
  }
}
