#pragma once
// Summary statistics of repeated measurements.
#include <cmath>
#include <cstddef>
#include <span>

namespace tkprobe {

struct Stats {
  double median = 0, min = 0, max = 0;
  double q1 = 0, q3 = 0;  // quartiles, linear interpolation between order statistics
  double mean = 0, stdev = 0;
  double cv = 0;  // stdev / mean (sample standard deviation); 0 for fewer than two samples
  std::size_t n = 0;
};

// Mean and coefficient of variation updated one sample at a time (Welford), so a sampling loop
// can test its noise after every sample without re-sorting what it has.
class RunningStats {
 public:
  void add(double x) {
    ++n_;
    const double delta = x - mean_;
    mean_ += delta / static_cast<double>(n_);
    m2_ += delta * (x - mean_);
  }
  std::size_t n() const { return n_; }
  double cv() const {
    return n_ > 1 && mean_ != 0 ? std::sqrt(m2_ / static_cast<double>(n_ - 1)) / std::fabs(mean_) : 0;
  }

 private:
  std::size_t n_ = 0;
  double mean_ = 0, m2_ = 0;
};

// Throws std::invalid_argument on an empty sample set.
Stats summarize(std::span<const double> samples);

// The statistics of every sample multiplied by k > 0 (a change of unit).
Stats scaled(const Stats& s, double k);

}  // namespace tkprobe
