// info's command line, in-process: without a GPU, exit 3 with the CUDA error.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::has_gpu;
using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, InfoWithoutGpuExitsThreeWithTheCudaError) {
  const auto r = run({"info"});
  if (has_gpu()) {
    EXPECT_EQ(r.code, 0);
    EXPECT_TRUE(mentions(r.out, "sms"));
  } else {
    EXPECT_EQ(r.code, 3);
    EXPECT_TRUE(mentions(r.err, "no CUDA device: "));
    EXPECT_TRUE(mentions(r.err, "cudaError")) << "carries the CUDA error name: " << r.err;
  }
}
