// The counters on a real GPU: SASS instructions issued by a kernel whose instruction count its
// source fixes (tests/gpu/counted_kernel.hpp) must be what the source says, every time.
#include <gtest/gtest.h>

#include <cmath>

#include "src/counters.hpp"
#include "src/device_buffer.hpp"
#include "tests/gpu/counted_kernel.hpp"

using namespace tkprobe;

namespace {

constexpr int kTrips = 1000;

CounterValue warp_instructions(int trips, unsigned* out) {
  return measure_counters({kWarpInstructionsIssued}, [&] { test_kernels::launch_counted(trips, out, nullptr); }).at(0);
}

bool restricted(const CounterValue& value) { return value.reason.find(kProfilingRestricted) != std::string::npos; }

}  // namespace

TEST(Counters, WarpInstructionsFollowTheLoopTripCount) {
  DeviceBuffer<unsigned> out(32);
  const CounterValue once = warp_instructions(kTrips, out.get());
  if (restricted(once)) GTEST_SKIP() << once.reason;
  ASSERT_TRUE(once.available) << once.reason;
  const CounterValue again = warp_instructions(kTrips, out.get());
  const CounterValue twice = warp_instructions(2 * kTrips, out.get());
  ASSERT_TRUE(again.available) << again.reason;
  ASSERT_TRUE(twice.available) << twice.reason;

  // One warp's path through the kernel depends on nothing but `trips`: the same count each time.
  EXPECT_EQ(again.value, once.value);
  EXPECT_GE(once.value, double(kTrips) * test_kernels::kStepsPerTrip) << "the loop alone issues this many";
  // The extra kTrips trips add the same instructions each: at least the kStepsPerTrip dependent
  // steps, plus the loop's own control (increment, compare, branch: 3 in a plain counted loop),
  // which 5% of kStepsPerTrip (6.4) bounds with room to spare.
  const double added = twice.value - once.value;
  EXPECT_EQ(std::fmod(added, kTrips), 0) << "added " << added << " warp instructions for " << kTrips << " trips";
  const double per_trip = added / kTrips;
  EXPECT_GE(per_trip, test_kernels::kStepsPerTrip);
  EXPECT_LE(per_trip, 1.05 * test_kernels::kStepsPerTrip);
}

TEST(Counters, AnUnknownMetricHasAReasonAndSpoilsNoOther) {
  DeviceBuffer<unsigned> out(32);
  const auto values = measure_counters({"tkprobe__no_such_metric.sum", kWarpInstructionsIssued},
                                       [&] { test_kernels::launch_counted(kTrips, out.get(), nullptr); });
  ASSERT_EQ(values.size(), 2u);
  if (restricted(values[1])) GTEST_SKIP() << values[1].reason;
  EXPECT_FALSE(values[0].available);
  EXPECT_NE(values[0].reason, "");
  EXPECT_NE(values[0].reason.find("tkprobe__no_such_metric.sum"), std::string::npos) << values[0].reason;
  ASSERT_TRUE(values[1].available) << values[1].reason;
  EXPECT_GT(values[1].value, 0);
}
