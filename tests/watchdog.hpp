#pragma once
// A time limit per GPU test. A kernel that never finishes (a pipeline wait that no copy will ever
// complete) otherwise holds the process until ctest's 1500 s or the GPU machine's lease runs out,
// and the log names no test: a gtest log shows only "[ RUN ]" for a test whose kernel hangs. The
// watchdog's thread calls `expired` with the armed test's name once the limit passes without a
// disarm; gpu_main.cpp's prints it and ends the process, whose context teardown stops the kernel.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace tkprobe::test {

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;
  using Expired = std::function<void(const std::string& what)>;

  Watchdog(Clock::duration limit, Expired expired) : limit_(limit), expired_(std::move(expired)) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts (or restarts) the limit for `what`.
  void arm(std::string what) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      what_ = std::move(what);
      deadline_ = Clock::now() + limit_;
      armed_ = true;
    }
    wake_.notify_all();
  }
  void disarm() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      armed_ = false;
    }
    wake_.notify_all();
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      if (!armed_) {
        wake_.wait(lock);
      } else if (Clock::now() < deadline_) {
        wake_.wait_until(lock, deadline_);  // woken early by arm, disarm or stop: the loop looks again
      } else {
        armed_ = false;
        const std::string what = what_;
        lock.unlock();
        expired_(what);
        lock.lock();
      }
    }
  }

  const Clock::duration limit_;
  const Expired expired_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string what_;
  Clock::time_point deadline_{};
  bool armed_ = false, stop_ = false;
  std::thread thread_{[this] { watch(); }};  // last: it starts once every member above exists
};

}  // namespace tkprobe::test
