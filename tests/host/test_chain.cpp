#include <gtest/gtest.h>

#include <random>
#include <set>

#include "probes/measure/chain.hpp"

namespace chain = tkprobe::chain;

TEST(Chain, StridedCycleLengthIsWordsOverGcd) {
  EXPECT_EQ(chain::cycle_length(chain::strided(4096, 1)), 4096u);
  EXPECT_EQ(chain::cycle_length(chain::strided(4096, 32)), 128u);
  EXPECT_EQ(chain::cycle_length(chain::strided(4096, 257)), 4096u);
}

TEST(Chain, RandomCycleVisitsEveryWordOnce) {
  std::mt19937_64 rng(42);
  const auto next = chain::random_cycle(1000, rng);
  EXPECT_EQ(chain::cycle_length(next), 1000u);
  const std::set<std::uint32_t> targets(next.begin(), next.end());
  EXPECT_EQ(targets.size(), 1000u);
  for (std::uint32_t i = 0; i < next.size(); ++i) EXPECT_NE(next[i], i);
}

TEST(Chain, RandomCycleDependsOnSeed) {
  std::mt19937_64 a(1), b(2);
  EXPECT_NE(chain::random_cycle(256, a), chain::random_cycle(256, b));
}

TEST(Chain, FitLineRecoversSlopeAndIntercept) {
  const std::vector<double> x{256, 512, 1024, 2048};
  std::vector<double> y;
  for (double v : x) y.push_back(30 * v + 70);
  const auto line = chain::fit_line(x, y);
  EXPECT_NEAR(line.slope, 30, 1e-9);
  EXPECT_NEAR(line.intercept, 70, 1e-6);
  EXPECT_NEAR(line.max_rel_residual, 0, 1e-12);
  y[1] *= 1.1;  // a bent line must show up in the residual
  EXPECT_GT(chain::fit_line(x, y).max_rel_residual, 0.02);
}
