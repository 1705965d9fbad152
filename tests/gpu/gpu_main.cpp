// GPU tests' main: without a GPU, exit 77 (ctest: skipped) and say why (--gtest_list_tests lists
// the tests anyway). A suite this GPU or this build cannot run (tests/gpu/suite_needs.hpp) is left
// out, named with the reason; with none left, exit 77. `gpu_tests --needs` lists what each suite
// needs, GPU or not, and exits 1 where a suite declares nothing. Each test runs under a time limit
// (tests/watchdog.hpp): TKPROBE_TEST_TIMEOUT seconds, 300 unless set, 0 for none; the slowest test
// takes under a minute on an H200.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/device.hpp"
#include "tests/gpu/suite_needs.hpp"
#include "tests/watchdog.hpp"

namespace {

constexpr int kDefaultTestSeconds = 300;
constexpr int kExitTimedOut = 124;  // as timeout(1) exits

class TimeLimit : public ::testing::EmptyTestEventListener {
 public:
  explicit TimeLimit(int seconds)
      : watchdog_(std::chrono::seconds(seconds), [seconds](const std::string& test) {
          std::fprintf(stderr,
                       "\ngpu_tests: %s still running after %d s: a kernel that never finishes (a barrier or "
                       "pipeline wait nothing will complete?); exiting %d. TKPROBE_TEST_TIMEOUT=SECONDS sets the "
                       "limit, 0 none.\n",
                       test.c_str(), seconds, kExitTimedOut);
          std::fflush(stderr);
          std::_Exit(kExitTimedOut);
        }) {}
  void OnTestStart(const ::testing::TestInfo& test) override {
    watchdog_.arm(std::string(test.test_suite_name()) + "." + test.name());
  }
  void OnTestEnd(const ::testing::TestInfo&) override { watchdog_.disarm(); }

 private:
  tkprobe::test::Watchdog watchdog_;
};

// TKPROBE_TEST_TIMEOUT's seconds; bad values say what is valid and exit 2.
int test_seconds() {
  const char* text = std::getenv("TKPROBE_TEST_TIMEOUT");
  if (text == nullptr || *text == '\0') return kDefaultTestSeconds;
  char* end = nullptr;
  const long seconds = std::strtol(text, &end, 10);
  if (*end != '\0' || seconds < 0 || seconds > 86400) {
    std::fprintf(stderr, "gpu_tests: TKPROBE_TEST_TIMEOUT='%s': expected whole seconds 0..86400 (0: no limit)\n", text);
    std::exit(2);
  }
  return int(seconds);
}

// Every suite of this binary, in order.
std::vector<std::string> suites() {
  std::vector<std::string> names;
  const auto& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) names.emplace_back(unit.GetTestSuite(i)->name());
  return names;
}

// What `suite` needs; a suite that declares nothing is named, and the program exits 1.
tkprobe::Requirements needs_of(const std::string& suite, const std::vector<std::unique_ptr<tkprobe::Probe>>& probes) {
  const auto needs = tkprobe::test::suite_needs(suite, probes);
  if (!needs) {
    std::fprintf(stderr,
                 "gpu_tests: suite %s declares no needs: name it after its probe, or in kOtherSuites "
                 "(tests/gpu/suite_needs.hpp)\n",
                 suite.c_str());
    std::exit(1);
  }
  return *needs;
}

// --needs: each suite and what it needs.
int print_needs() {
  const auto probes = tkprobe::make_probes();
  for (const std::string& suite : suites())
    std::printf("%s: %s\n", suite.c_str(), describe(needs_of(suite, probes)).c_str());
  return 0;
}

// Leaves out of the run each suite that `device` or this build cannot run, saying why; returns how
// many suites remain.
int leave_out_unrunnable(const tkprobe::DeviceInfo& device) {
  const auto probes = tkprobe::make_probes();
  std::string left_out;
  int remaining = 0;
  for (const std::string& suite : suites()) {
    const std::string why = why_not_runnable(needs_of(suite, probes), device);
    if (why.empty()) {
      ++remaining;
      continue;
    }
    std::printf("skipped: %s.*: %s\n", suite.c_str(), why.c_str());
    left_out += ":" + suite + ".*";
  }
  if (!left_out.empty()) {
    const std::string filter = GTEST_FLAG_GET(filter);
    // gtest's filter: POSITIVE[-NEGATIVE], patterns separated by ':'.
    GTEST_FLAG_SET(filter, filter + (filter.find('-') == std::string::npos ? "-" + left_out.substr(1) : left_out));
  }
  return remaining;
}

}  // namespace

int main(int argc, char** argv) {
  const int seconds = test_seconds();
  ::testing::InitGoogleTest(&argc, argv);
  if (GTEST_FLAG_GET(list_tests)) return RUN_ALL_TESTS();  // the names, GPU or not
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--needs") return print_needs();
  }
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf("skipped: no CUDA device (%s)\n", status != cudaSuccess ? cudaGetErrorString(status) : "0 devices");
    return 77;
  }
  if (leave_out_unrunnable(tkprobe::query_device(0)) == 0) return 77;
  if (seconds > 0) ::testing::UnitTest::GetInstance()->listeners().Append(new TimeLimit(seconds));
  return RUN_ALL_TESTS();
}
