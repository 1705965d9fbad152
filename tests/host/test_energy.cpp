// Energy per call from the steps of NVML's energy counter (src/energy.hpp), without a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "src/energy.hpp"

using tkprobe::energy_from_steps;
using tkprobe::EnergyStep;

namespace {

// Steps every `period` seconds of a counter drawing `watts`, from `joules` at `start`.
std::vector<EnergyStep> steady(int n, double watts, double period = 0.1, double start = 5.0, double joules = 1e4) {
  std::vector<EnergyStep> steps;
  for (int i = 0; i < n; ++i) steps.push_back({start + i * period, joules + watts * i * period});
  return steps;
}

}  // namespace

TEST(Energy, PowerIsTheEnergyBetweenTheFirstAndLastStepOverTheirTime) {
  const auto e = energy_from_steps(steady(11, 650.0), 0.002);
  ASSERT_TRUE(e.has_value());
  EXPECT_NEAR(e->watts, 650.0, 1e-9);
  EXPECT_NEAR(e->window_s, 1.0, 1e-12);
  EXPECT_NEAR(e->joules_per_call, 650.0 * 0.002, 1e-12);
  EXPECT_EQ(e->steps, 11);
  // Only the ends count: uneven steps between them change nothing.
  auto uneven = steady(11, 650.0);
  uneven[3].joules += 7;
  uneven[4].host_s += 0.03;
  EXPECT_NEAR(energy_from_steps(uneven, 0.002)->watts, 650.0, 1e-9);
}

TEST(Energy, TooFewStepsOrACounterThatDidNotAdvanceGiveNothing) {
  EXPECT_FALSE(energy_from_steps(steady(tkprobe::kMinEnergySteps - 1, 500.0), 0.001));
  EXPECT_TRUE(energy_from_steps(steady(tkprobe::kMinEnergySteps, 500.0), 0.001));
  EXPECT_FALSE(energy_from_steps(steady(8, 0.0), 0.001)) << "no energy drawn";
  EXPECT_FALSE(energy_from_steps(steady(8, -10.0), 0.001)) << "a counter that went back (driver reloaded)";
  EXPECT_FALSE(energy_from_steps(steady(8, 500.0, 0.0), 0.001)) << "no time between the steps";
  EXPECT_FALSE(energy_from_steps(steady(8, 500.0), 0.0)) << "no time per call";
}
