// attention's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "probes/attention/varlen_lengths.hpp"
#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::has_gpu;
using cli_fixtures::mentions;
using fixtures::run;

namespace {

// Each `tkprobe attention OPTIONS` exits 2 (usage) with a message that holds its rule.
void expect_usage_errors(const std::vector<std::pair<std::vector<std::string>, std::string>>& cases) {
  for (const auto& [options, why] : cases) {
    std::vector<std::string> args{"attention"};
    args.insert(args.end(), options.begin(), options.end());
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << why;
    EXPECT_TRUE(mentions(r.err, why)) << r.err;
  }
}

}  // namespace

TEST(Cli, AttentionShapeOptionsAreAllOrNothingAndNotWithSweep) {
  const auto dir = fixtures::temp_dir("cli-attention");
  const auto out = dir / "r.json";
  const auto with_sweep = run({"attention", "--sweep", "--seq", "1024", "--json", out.string()});
  EXPECT_EQ(with_sweep.code, 2);
  EXPECT_TRUE(mentions(with_sweep.err, "--sweep runs the standard shapes: give it no --batch")) << with_sweep.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  for (const char* option : {"--causal", "--kv-heads"}) {
    std::vector<std::string> args{"attention", "--sweep", option};
    if (std::string(option) == "--kv-heads") args.push_back("2");
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << option;
    EXPECT_TRUE(mentions(r.err, "--sweep runs the standard shapes")) << r.err;
  }
  for (const std::vector<std::string>& partial :
       {std::vector<std::string>{"attention", "--batch", "1", "--heads", "4"},
        std::vector<std::string>{"attention", "--batch", "1", "--heads", "4", "--seq", "128"},
        std::vector<std::string>{"attention", "--causal"}, std::vector<std::string>{"attention", "--kv-heads", "2"},
        std::vector<std::string>{"attention", "--seq-k", "4096"}}) {
    const auto r = run(partial);
    EXPECT_EQ(r.code, 2) << partial.back();
    EXPECT_TRUE(mentions(r.err, "--batch, --heads, --seq, --head-dim: give all four")) << r.err;
  }
}

TEST(Cli, AttentionBadKernelAndNumbersAreRefused) {
  const auto kernel = run({"attention", "--kernel", "flash"});
  EXPECT_EQ(kernel.code, 2);
  EXPECT_TRUE(mentions(kernel.err, "--kernel")) << kernel.err;
  EXPECT_TRUE(mentions(kernel.err, "wgmma") && mentions(kernel.err, "mma-sync")) << kernel.err;
  const auto not_a_number = run({"attention", "--batch", "two", "--heads", "4", "--seq", "128", "--head-dim", "64"});
  EXPECT_EQ(not_a_number.code, 2);
  EXPECT_TRUE(mentions(not_a_number.err, "--batch")) << not_a_number.err;
}

TEST(Cli, AttentionPassesAreNamedAndTheBackwardNeedsTheWgmmaKernel) {
  const auto bad = run({"attention", "--pass", "sideways"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(mentions(bad.err, "--pass") && mentions(bad.err, "fwd+bwd")) << bad.err;
  for (const char* pass : {"bwd", "fwd+bwd", "all"}) {
    const auto portable = run({"attention", "--pass", pass, "--kernel", "mma-sync"});
    EXPECT_EQ(portable.code, 2) << pass;
    EXPECT_TRUE(mentions(portable.err, "the backward is written for the wgmma kernel only")) << portable.err;
  }
}

TEST(Cli, AttentionDqPathsAreNamedAndNeedTheBackward) {
  const auto bad = run({"attention", "--pass", "bwd", "--dq", "sideways"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(mentions(bad.err, "--dq") && mentions(bad.err, "fastest") && mentions(bad.err, "deterministic") &&
              mentions(bad.err, "reduce"))
      << bad.err;
  for (const char* path : {"reduce", "deterministic"}) {
    const auto forward = run({"attention", "--dq", path});
    EXPECT_EQ(forward.code, 2) << path;
    EXPECT_TRUE(mentions(forward.err, std::string("--dq ") + path + " picks the backward's dQ path")) << forward.err;
  }
}

// --dtype: bf16 (the default, all the suite runs) or e4m3, the wgmma forward at head dim 128.
TEST(Cli, AttentionDtypeIsNamedAndE4m3IsTheWgmmaForwardAtHeadDim128) {
  const auto bad = run({"attention", "--dtype", "fp16"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(mentions(bad.err, "--dtype") && mentions(bad.err, "bf16") && mentions(bad.err, "e4m3")) << bad.err;
  const auto portable = run({"attention", "--dtype", "e4m3", "--kernel", "mma-sync"});
  EXPECT_EQ(portable.code, 2);
  EXPECT_TRUE(mentions(portable.err, "the e4m3 forward is written for the wgmma kernel only")) << portable.err;
  for (const char* pass : {"bwd", "fwd+bwd", "all"}) {
    const auto backward = run({"attention", "--dtype", "e4m3", "--pass", pass});
    EXPECT_EQ(backward.code, 2) << pass;
    EXPECT_TRUE(mentions(backward.err, "the e4m3 kernel is a forward")) << backward.err;
  }
  const auto d64 =
      run({"attention", "--dtype", "e4m3", "--batch", "1", "--heads", "4", "--seq", "128", "--head-dim", "64"});
  EXPECT_EQ(d64.code, 2);
  EXPECT_TRUE(mentions(d64.err, "head dim = 64: the e4m3 forward takes 128")) << d64.err;
}

TEST(Cli, AttentionShapesTheKernelsRefuseExitTwoWithTheRule) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--batch", "0", "--heads", "4", "--seq", "128", "--head-dim", "64"}, "batch = 0: give a positive number"},
      {{"--batch", "1", "--heads", "4", "--seq", "-5", "--head-dim", "64"}, "seq = -5: give a positive number"},
      {{"--batch", "1", "--heads", "4", "--kv-heads", "3", "--seq", "128", "--head-dim", "64"},
       "the query heads must be a multiple of the key/value heads"},
      {{"--batch", "1", "--heads", "4", "--kv-heads", "0", "--seq", "128", "--head-dim", "64"},
       "kv heads = 0: give a positive number"},
      {{"--batch", "1", "--heads", "4", "--seq", "128", "--head-dim", "80"}, "head dim = 80: give 64, 96, 128 or 256"},
      {{"--batch", "1", "--heads", "70000", "--kv-heads", "1", "--seq", "128", "--head-dim", "64"}, "at most 65535"},
      {{"--batch", "1", "--heads", "4", "--seq", "128", "--seq-k", "-3", "--head-dim", "64"},
       "seq k = -3: give a positive number (0: as many as seq)"},
  };
  for (const auto& [options, why] : cases) {
    std::vector<std::string> args{"attention"};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--kernel", "mma-sync"});
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << why;
    EXPECT_TRUE(mentions(r.err, why)) << r.err;
    EXPECT_TRUE(mentions(r.err, "with the mma-sync kernel")) << r.err;
  }
}

TEST(Cli, AttentionValidShapeGetsPastValidation) {
  const auto r = run({"attention", "--batch", "1", "--heads", "4", "--kv-heads", "2", "--seq", "100", "--head-dim",
                      "64", "--causal", "--quick"});
  if (has_gpu()) {
    EXPECT_NE(r.code, 2) << r.err;
  } else {
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_TRUE(mentions(r.err, "no CUDA device")) << r.err;
  }
}

// Head dims 96 and 256: the wgmma forward's alone. The mma.sync kernel asked for by name, or a
// backward pass, exits 2 saying so; left to default, the mma.sync rows are skipped with the reason.
TEST(Cli, AttentionHeadDims96And256AreTheWgmmaForwards) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--batch", "1", "--heads", "4", "--seq", "100", "--head-dim", "256", "--kernel", "mma-sync"},
       "head dim = 256: the mma-sync forward takes 64 or 128"},
      {{"--batch", "1", "--heads", "4", "--seq", "100", "--head-dim", "256", "--pass", "bwd"},
       "head dim = 256: the backward takes 64 or 128 (give --pass fwd)"},
      {{"--varlen", "100,7", "--heads", "4", "--head-dim", "256", "--pass", "all"},
       "head dim = 256: the backward takes 64 or 128 (give --pass fwd)"},
      {{"--batch", "1", "--heads", "4", "--seq", "100", "--head-dim", "96", "--pass", "fwd+bwd"},
       "head dim = 96: the backward takes 64 or 128 (give --pass fwd)"},
  };
  expect_usage_errors(cases);
  for (const std::vector<std::string>& good :
       {std::vector<std::string>{"attention", "--batch", "1", "--heads", "4", "--seq", "100", "--head-dim", "256"},
        std::vector<std::string>{"attention", "--varlen", "100,0,7", "--heads", "4", "--head-dim", "256",
                                 "--causal"}}) {
    const auto r = run(good);
    EXPECT_EQ(r.code, has_gpu() ? 0 : 3) << r.err;
  }
}

// --energy: 0 (not measured) or a window of 0.5 to 3600 s; anything else is refused before any GPU work.
TEST(Cli, AttentionEnergyWindowIsZeroOrHalfASecondOrMore) {
  for (const char* window : {"0.1", "-1", "inf", "nan", "3601"}) {
    const auto r = run({"attention", "--energy", window});
    EXPECT_EQ(r.code, 2) << window;
    EXPECT_TRUE(mentions(r.err, "give 0 (not measured) or a window of 0.5 to 3600 seconds")) << window << ": " << r.err;
  }
}

// --varlen: lengths or random:SEED, with --heads and --head-dim, the wgmma kernels in bf16.
TEST(Cli, AttentionVarlenTakesLengthsOrARandomMix) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--varlen", "100,x", "--heads", "4", "--head-dim", "64"}, "'x' is no length: give lengths separated by commas"},
      {{"--varlen", "100,", "--heads", "4", "--head-dim", "64"}, "'' is no length"},
      {{"--varlen", "0,0", "--heads", "4", "--head-dim", "64"}, "0 tokens in all"},
      {{"--varlen", "random:-1", "--heads", "4", "--head-dim", "64"}, "the seed must be a non-negative integer"},
      {{"--varlen", "100", "--heads", "4"}, "--varlen needs --heads and --head-dim"},
      {{"--varlen", "100", "--heads", "4", "--head-dim", "64", "--seq", "100"}, "give it no --batch, --seq"},
      {{"--varlen", "100", "--heads", "4", "--head-dim", "64", "--dtype", "e4m3"}, "--varlen runs the wgmma kernels"},
      {{"--varlen", "100", "--heads", "4", "--head-dim", "64", "--dq", "reduce"}, "--dq reduce picks the backward's"},
      {{"--varlen", "100", "--heads", "4", "--head-dim", "80"}, "head dim = 80: give 64, 96, 128 or 256"},
      {{"--varlen", "100", "--heads", "4", "--kv-heads", "3", "--head-dim", "64"}, "a multiple of the key/value heads"},
  };
  expect_usage_errors(cases);
  for (const char* pass : {"fwd", "all"}) {
    const auto good =
        run({"attention", "--varlen", "1000,0,1,77", "--heads", "4", "--head-dim", "64", "--causal", "--pass", pass});
    EXPECT_EQ(good.code, has_gpu() ? 0 : 3) << good.err;
  }
}

// random:SEED: the same lengths for a seed, 16 to 8192 long, 16384 tokens in all; another seed others.
TEST(AttentionVarlenLengths, ARandomMixIsSeededLongTailedAndSumsToTheSweepsTokens) {
  std::string why;
  const std::vector<int> a = tkprobe::attention_probe::varlen_lengths("random:1", why);
  EXPECT_EQ(why, "");
  EXPECT_EQ(a, tkprobe::attention_probe::varlen_lengths("random:1", why));
  EXPECT_NE(a, tkprobe::attention_probe::varlen_lengths("random:2", why));
  int total = 0, shortest = 1 << 30, longest = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    total += a[i];
    if (i + 1 < a.size()) shortest = std::min(shortest, a[i]);  // the last is cut to fit
    longest = std::max(longest, a[i]);
  }
  EXPECT_EQ(total, tkprobe::attention_probe::kRandomTokens);
  EXPECT_GE(shortest, tkprobe::attention_probe::kShortest);
  EXPECT_LE(longest, tkprobe::attention_probe::kLongest);
  EXPECT_GE(a.size(), 4u) << "a mix, not one sequence";
  EXPECT_EQ(tkprobe::attention_probe::varlen_lengths("7,0,1", why), (std::vector<int>{7, 0, 1}));
  // scripts/sdpa_varlen.py draws the same for its peers (tests/host/test_compare_sdpa.py pins it too).
  EXPECT_EQ(a, (std::vector<int>{548, 1677, 6836, 255, 255, 1866, 3811, 418, 94, 624}));
}
