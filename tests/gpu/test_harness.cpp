// The harness on a real GPU: CUDA-event time and the clock measured inside the kernel must
// tell the same story about a kernel of known length.
#include <gtest/gtest.h>

#include "probes/measure/clock_bracket.hpp"
#include "src/device_buffer.hpp"
#include "src/harness.hpp"
#include "tests/gpu/spin_kernel.hpp"

using namespace tkprobe;

TEST(Harness, EventTimeAgreesWithTheInKernelClock) {
  const DeviceInfo device = query_device(0);
  Progress progress;
  TimingConfig config;
  config.flush_l2 = true;  // exercised here; a spin kernel does not care
  Harness harness(config, device, progress);
  DeviceBuffer<ClockWindow> clock(1);
  constexpr std::uint64_t kCycles = 2'000'000;  // about 1 ms at the H200's 1980 MHz

  const Measurement m = harness.time_kernel_ms(
      "spin", [&](cudaStream_t s) { test_kernels::launch_spin(kCycles, clock.get(), s); }, clock.get());

  ASSERT_GE(m.stats.n, static_cast<std::size_t>(config.min_samples));
  EXPECT_GT(m.sm_clock_mhz, 500);
  EXPECT_LT(m.sm_clock_mhz, 1.05 * device.sm_clock_max_mhz);
  const double expected_ms = kCycles / (m.sm_clock_mhz * 1e3);
  EXPECT_NEAR(m.stats.median, expected_ms, 0.1 * expected_ms) << "launch overhead is far below 10% of 1 ms";
  EXPECT_LE(m.stats.min, m.stats.q1);
  EXPECT_LE(m.stats.q3, m.stats.max);
  EXPECT_TRUE(m.telemetry.contains("throttled"));
  EXPECT_TRUE(m.telemetry.contains("kernel_sm_clock_mhz"));
}

// A kernel that cannot stamp its own clock gets it from a bracket (probes/measure/clock_bracket.hpp): the
// bracket must read the clock the spin kernel itself measures, and stay out of the timed events.
TEST(Harness, AClockBracketReadsTheClockTheKernelSees) {
  const DeviceInfo device = query_device(0);
  Progress progress;
  Harness harness(TimingConfig{}, device, progress);
  DeviceBuffer<ClockWindow> own(1);
  SmClockBracket clock(device.sms);
  const ClockBracket bracket{[&](cudaStream_t s) { clock.begin(s); }, [&](cudaStream_t s) { clock.end(s); },
                             clock.window()};
  const auto spin = [&](std::uint64_t cycles) {
    return [&, cycles](cudaStream_t s) { test_kernels::launch_spin(cycles, own.get(), s); };
  };

  const Measurement m = harness.time_kernel_rate("spin, bracketed", spin(2'000'000), 1.0, bracket);
  ASSERT_TRUE(m.per_mhz.has_value()) << "every sample carried the bracket's clock";
  const double inside = window_mhz(own.download()[0]);
  EXPECT_NEAR(m.sm_clock_mhz, inside, 0.05 * inside);

  // ~20 us: the two stamping kernels (a few us) inside the events would add well over 10%.
  constexpr std::uint64_t kShort = 40'000;
  const double plain_ms = harness.time_kernel_ms("spin", spin(kShort)).stats.median;
  const double bracketed_ms = 1e3 / harness.time_kernel_rate("spin, bracketed", spin(kShort), 1.0, bracket).stats.median;
  EXPECT_NEAR(bracketed_ms, plain_ms, 0.1 * plain_ms) << "the stamping kernels are not in the timed events";
}
