#include "src/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace tkprobe {

Progress::Progress() : tty_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()), last_(start_) {}

void Progress::update(std::string_view what) {
  using namespace std::chrono;
  const auto now = steady_clock::now();
  if (!tty_ || now - start_ < seconds(1) || (shown_ && now - last_ < milliseconds(100))) return;
  last_ = now;
  shown_ = true;
  std::fprintf(stderr, "\r\033[K[%5.1fs] %.*s", duration<double>(now - start_).count(), static_cast<int>(what.size()),
               what.data());
  std::fflush(stderr);
}

void Progress::clear() {
  if (!shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace tkprobe
