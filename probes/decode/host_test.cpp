// decode's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2, before any GPU is asked for; the batch-1 fit of a step's fixed cost and rate.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "probes/decode/step_fit.hpp"
#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

TEST(Cli, DecodeOptionsSayWhatIsValid) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--batch", "2"}, "--batch, --keys: give both, or neither for the sweep"},
      {{"--keys", "100"}, "--batch, --keys: give both, or neither for the sweep"},
      {{"--batch", "2", "--keys", "0"}, "--keys 0: give at least 1"},
      {{"--splits", "0"}, "--splits 0: give 1 to 64"},
      {{"--splits", "65"}, "--splits 65: give 1 to 64"},
      {{"--page-size", "0"}, "--page-size 0: give at least 1"},
      {{"--batch", "0", "--keys", "100"}, "batch, q_tokens, heads and kv_heads must each be at least 1"},
      {{"--q-tokens", "0"}, "batch, q_tokens, heads and kv_heads must each be at least 1"},
      {{"--batch", "65536", "--keys", "100"}, "at most 65535 (the grid)"},
      {{"--batch", "3", "--keys", "1000000000"}, "at most 2147483647 cached keys in all"},
      {{"--batch", "two", "--keys", "100"}, "--batch"},
      {{"--cache", "fp16"}, "--cache fp16: give bf16 or e4m3"},
  };
  for (const auto& [extra, expected] : cases) {
    std::vector<std::string> args{"decode"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << extra.front();
    EXPECT_TRUE(mentions(r.err, expected)) << r.err;
  }
}

namespace fit = tkprobe::decode_fit;

// Steps of 10 us plus their bytes at 3 TB/s, as the sweep's lengths of one sequence read them.
TEST(DecodeFit, AStepsFixedCostAndRateComeBack) {
  const double fixed = 10e-6, rate = 3e12;
  std::vector<fit::Sample> steps;
  for (double bytes : {32e6, 128e6, 512e6}) steps.push_back({bytes, fixed + bytes / rate});
  const auto f = fit::fit(steps);
  ASSERT_TRUE(f.has_value());
  EXPECT_NEAR(f->fixed_seconds, fixed, 1e-12);
  EXPECT_NEAR(f->bytes_per_second / rate, 1, 1e-9);
  // At 85% of a 3.2 TB/s ceiling: bytes / (10 us + bytes / 3 TB/s) = 2.72 TB/s from 291 MB on.
  const double from = fit::bytes_for_share(*f, 3.2e12, 0.85);
  EXPECT_NEAR(from / (fixed + from / rate), 0.85 * 3.2e12, 1e3);
  EXPECT_NEAR(from, 2.72e12 * fixed / (1 - 2.72 / 3), 1);
}

TEST(DecodeFit, NoFitWithoutTwoSizesOrARate) {
  EXPECT_FALSE(fit::fit({}).has_value());
  EXPECT_FALSE(fit::fit({{1e6, 1e-5}}).has_value()) << "one step";
  EXPECT_FALSE(fit::fit({{1e6, 1e-5}, {1e6, 2e-5}}).has_value()) << "one size twice";
  EXPECT_FALSE(fit::fit({{1e6, 2e-5}, {2e6, 1e-5}}).has_value()) << "less time for more bytes";
}

TEST(DecodeFit, AShareBeyondTheRateIsNeverReached) {
  const fit::StepFit f{10e-6, 2e12};
  EXPECT_TRUE(std::isinf(fit::bytes_for_share(f, 3e12, 0.85))) << "2 TB/s never makes 2.55";
  EXPECT_EQ(fit::bytes_for_share({-1e-6, 3e12}, 3.2e12, 0.85), 0) << "no fixed cost: from the first byte";
}
