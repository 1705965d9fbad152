// tests/watchdog.hpp: the GPU tests' time limit fires for the armed test once its limit passes, and
// never for a test that ended (disarmed) or was followed by another (re-armed).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/watchdog.hpp"

using namespace std::chrono_literals;
using tkprobe::test::Watchdog;

namespace {

// What a watchdog reported, and when.
struct Reports {
  std::mutex mutex;
  std::vector<std::string> names;
  std::vector<Watchdog::Clock::time_point> times;
  Watchdog::Expired sink() {
    return [this](const std::string& what) {
      std::lock_guard<std::mutex> lock(mutex);
      names.push_back(what);
      times.push_back(Watchdog::Clock::now());
    };
  }
  std::vector<std::string> seen() {
    std::lock_guard<std::mutex> lock(mutex);
    return names;
  }
};

// Waits (up to 10 s, for a loaded machine) until `reports` holds n names.
bool wait_for(Reports& reports, std::size_t n) {
  for (auto end = Watchdog::Clock::now() + 10s; Watchdog::Clock::now() < end; std::this_thread::sleep_for(5ms))
    if (reports.seen().size() >= n) return true;
  return false;
}

}  // namespace

TEST(Watchdog, FiresForTheArmedTestAfterItsLimit) {
  Reports reports;
  Watchdog dog(100ms, reports.sink());
  const auto armed = Watchdog::Clock::now();
  dog.arm("Suite.Hangs");
  ASSERT_TRUE(wait_for(reports, 1));
  EXPECT_EQ(reports.seen(), std::vector<std::string>{"Suite.Hangs"});
  EXPECT_GE(reports.times[0] - armed, 100ms) << "never before the limit";
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(reports.seen().size(), 1u) << "once per arm";
}

TEST(Watchdog, SilentForATestThatEnded) {
  Reports reports;
  {
    Watchdog dog(100ms, reports.sink());
    for (int i = 0; i < 5; ++i) {
      dog.arm("Suite.Quick" + std::to_string(i));
      std::this_thread::sleep_for(10ms);
      dog.disarm();
    }
    std::this_thread::sleep_for(400ms);
  }
  EXPECT_TRUE(reports.seen().empty());
}

TEST(Watchdog, ReArmingRestartsTheLimitForTheNextTest) {
  Reports reports;
  Watchdog dog(300ms, reports.sink());
  dog.arm("Suite.First");
  std::this_thread::sleep_for(200ms);
  const auto second = Watchdog::Clock::now();
  dog.arm("Suite.Second");
  ASSERT_TRUE(wait_for(reports, 1));
  EXPECT_EQ(reports.seen(), std::vector<std::string>{"Suite.Second"}) << "the first test's limit must not fire";
  EXPECT_GE(reports.times[0] - second, 300ms);
}
