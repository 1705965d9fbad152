// GPU tests' main: without a GPU, exit 77 (ctest: skipped) and say why (--gtest_list_tests lists
// the tests anyway). Each test runs under a time limit (tests/watchdog.hpp): TKPROBE_TEST_TIMEOUT
// seconds, 300 unless set, 0 for none; the slowest test takes under a minute on an H200.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

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

}  // namespace

int main(int argc, char** argv) {
  const int seconds = test_seconds();
  ::testing::InitGoogleTest(&argc, argv);
  if (GTEST_FLAG_GET(list_tests)) return RUN_ALL_TESTS();  // the names, GPU or not
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf("skipped: no CUDA device (%s)\n", status != cudaSuccess ? cudaGetErrorString(status) : "0 devices");
    return 77;
  }
  if (seconds > 0) ::testing::UnitTest::GetInstance()->listeners().Append(new TimeLimit(seconds));
  return RUN_ALL_TESTS();
}
