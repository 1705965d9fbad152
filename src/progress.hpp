#pragma once
// A progress line on stderr, shown only on a terminal and only once work has run over a
// second; it never touches stdout, which carries the result.
#include <chrono>
#include <string_view>

namespace tkprobe {

class Progress {
 public:
  Progress();
  ~Progress() { clear(); }
  void update(std::string_view what);
  void clear();

 private:
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace tkprobe
