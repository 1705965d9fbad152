#pragma once
// Summary statistics of repeated measurements.
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

// Throws std::invalid_argument on an empty sample set.
Stats summarize(std::span<const double> samples);

// The q-quantile (0 <= q <= 1) of an ascending-sorted, non-empty range.
double quantile_sorted(std::span<const double> sorted, double q);

}  // namespace tkprobe
