#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "src/harness.hpp"
#include "src/stats.hpp"

using tkprobe::summarize;

TEST(Stats, OddCountMedianAndQuartiles) {
  const std::vector<double> x{5, 1, 3, 2, 4};
  const auto s = summarize(x);
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.q1, 2);
  EXPECT_DOUBLE_EQ(s.q3, 4);
  EXPECT_DOUBLE_EQ(s.mean, 3);
}

TEST(Stats, EvenCountInterpolates) {
  const std::vector<double> x{1, 2, 3, 4};
  const auto s = summarize(x);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.q1, 1.75);
  EXPECT_DOUBLE_EQ(s.q3, 3.25);
}

TEST(Stats, CoefficientOfVariationUsesSampleStdev) {
  const std::vector<double> x{9, 11};
  const auto s = summarize(x);
  EXPECT_NEAR(s.stdev, 1.41421356, 1e-6);
  EXPECT_NEAR(s.cv, 0.141421356, 1e-7);
}

TEST(Stats, SingleSampleHasNoSpread) {
  const std::vector<double> x{7};
  const auto s = summarize(x);
  EXPECT_DOUBLE_EQ(s.median, 7);
  EXPECT_DOUBLE_EQ(s.cv, 0);
}

TEST(Stats, RunningCvMatchesTheBatchOne) {
  const std::vector<double> x{3, 9, 4, 11, 7, 7.5};
  tkprobe::RunningStats running;
  for (double v : x) running.add(v);
  EXPECT_EQ(running.n(), x.size());
  EXPECT_NEAR(running.cv(), summarize(x).cv, 1e-12);
}

TEST(Stats, EmptyThrows) { EXPECT_THROW(summarize(std::vector<double>{}), std::invalid_argument); }

TEST(Sampling, StopsWhenQuietAndLongEnough) {
  tkprobe::TimingConfig c;
  c.min_samples = 10;
  c.min_time_s = 0.1;
  c.max_noise = 0.01;
  c.timeout_s = 5;
  bool converged = false;
  EXPECT_FALSE(tkprobe::sampling_done(c, 10, 0.005, 0.05, 1.0, &converged));  // not enough measured time yet
  EXPECT_TRUE(tkprobe::sampling_done(c, 10, 0.005, 0.2, 1.0, &converged));
  EXPECT_TRUE(converged);
  EXPECT_FALSE(tkprobe::sampling_done(c, 9, 0.005, 0.2, 1.0, &converged));  // too few samples
  EXPECT_FALSE(tkprobe::sampling_done(c, 10, 0.05, 1.0, 1.0, &converged));  // noisy
  EXPECT_TRUE(tkprobe::sampling_done(c, 10, 0.05, 1.0, 6.0, &converged));   // past the timeout
  EXPECT_FALSE(converged);
  c.max_samples = 10;
  EXPECT_TRUE(tkprobe::sampling_done(c, 10, 0.05, 1.0, 1.0, &converged));  // at the sample cap
}

// Warm-up samples of 10 ms each: a window is two of them.
TEST(ClockSettle, EndsWhenTwoWindowsRunAtOneClock) {
  tkprobe::ClockSettle settle;
  EXPECT_FALSE(settle.add(1500, 0.01));
  EXPECT_FALSE(settle.add(1500, 0.01));  // the first window: nothing to hold it against
  EXPECT_FALSE(settle.add(1503, 0.01));
  EXPECT_TRUE(settle.add(1503, 0.01));  // 0.2% from the first: within 0.5%
  EXPECT_TRUE(settle.settled());
}

TEST(ClockSettle, GoesOnWhileTheClockFalls) {
  tkprobe::ClockSettle settle;
  double mhz = 1980;
  int samples = 0;
  for (; !settle.add(mhz, 0.01); ++samples) mhz = std::max(1500.0, mhz - 10);  // 1% a window until 1500
  EXPECT_TRUE(settle.settled());
  EXPECT_EQ(mhz, 1500);
  EXPECT_GT(samples, 48);  // 48 samples to fall 480 MHz, then two windows at 1500
}

TEST(ClockSettle, OnlyAKernelBelowTheTopClockSettles) {
  EXPECT_FALSE(tkprobe::ClockSettle::needed(1980, 1980));
  EXPECT_FALSE(tkprobe::ClockSettle::needed(1945, 1980));  // 98.2%: at the top but for NVML's steps
  EXPECT_TRUE(tkprobe::ClockSettle::needed(1935, 1980));
  EXPECT_TRUE(tkprobe::ClockSettle::needed(1500, 1980));
}

TEST(ClockSettle, StopsAtItsBudgetUnsettled) {
  tkprobe::ClockSettle settle;
  int samples = 0;
  for (; !settle.add(samples % 4 < 2 ? 1500 : 1600, 0.01); ++samples) {
  }
  EXPECT_FALSE(settle.settled());
  EXPECT_EQ(samples + 1, 100);  // 1 s of 10 ms samples
}

TEST(Stats, ScaledChangesTheUnitNotTheSpread) {
  const std::vector<double> v{1, 2, 3, 4};
  const auto s = tkprobe::summarize(v), k = tkprobe::scaled(s, 10);
  EXPECT_DOUBLE_EQ(k.median, 10 * s.median);
  EXPECT_DOUBLE_EQ(k.q3, 10 * s.q3);
  EXPECT_DOUBLE_EQ(k.stdev, 10 * s.stdev);
  EXPECT_DOUBLE_EQ(k.cv, s.cv);
  EXPECT_EQ(k.n, s.n);
}
