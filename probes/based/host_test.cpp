// based's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::has_gpu;
using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, BasedShapeOptionsAreAllOrNothingAndNotWithSweep) {
  const auto dir = fixtures::temp_dir("cli-based");
  const auto out = dir / "r.json";
  const auto with_sweep = run({"based", "--sweep", "--seq", "1024", "--json", out.string()});
  EXPECT_EQ(with_sweep.code, 2);
  EXPECT_TRUE(mentions(with_sweep.err, "--sweep runs the standard shapes: give it no --batch")) << with_sweep.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  const auto value_dim = run({"based", "--sweep", "--value-dim", "64"});
  EXPECT_EQ(value_dim.code, 2);
  EXPECT_TRUE(mentions(value_dim.err, "--sweep runs the standard shapes")) << value_dim.err;
  for (const std::vector<std::string>& partial :
       {std::vector<std::string>{"based", "--batch", "1", "--heads", "4"},
        std::vector<std::string>{"based", "--seq", "128"}, std::vector<std::string>{"based", "--value-dim", "64"}}) {
    const auto r = run(partial);
    EXPECT_EQ(r.code, 2) << partial.back();
    EXPECT_TRUE(mentions(r.err, "--batch, --heads, --seq: give all three")) << r.err;
  }
  const auto not_a_number = run({"based", "--batch", "two", "--heads", "4", "--seq", "128"});
  EXPECT_EQ(not_a_number.code, 2);
  EXPECT_TRUE(mentions(not_a_number.err, "--batch")) << not_a_number.err;
}

TEST(Cli, BasedShapesTheKernelRefusesExitTwoWithTheRule) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--batch", "0", "--heads", "4", "--seq", "128"}, "batch = 0: give a positive number"},
      {{"--batch", "1", "--heads", "4", "--seq", "-5"}, "seq = -5: give a positive number"},
      {{"--batch", "1", "--heads", "4", "--seq", "128", "--value-dim", "96"}, "value dim = 96: give 64 or 128"},
  };
  for (const auto& [options, why] : cases) {
    std::vector<std::string> args{"based"};
    args.insert(args.end(), options.begin(), options.end());
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << why;
    EXPECT_TRUE(mentions(r.err, why)) << r.err;
  }
}

TEST(Cli, BasedValidShapeGetsPastValidation) {
  const auto r = run({"based", "--batch", "1", "--heads", "3", "--seq", "100", "--no-normalize", "--quick"});
  if (has_gpu()) {
    EXPECT_NE(r.code, 2) << r.err;
  } else {
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_TRUE(mentions(r.err, "no CUDA device")) << r.err;
  }
}
