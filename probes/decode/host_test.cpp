// decode's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2, before any GPU is asked for.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

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
