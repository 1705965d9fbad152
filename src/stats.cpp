#include "src/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace tkprobe {

namespace {

// The q-quantile (0 <= q <= 1) of an ascending-sorted, non-empty range.
double quantile_sorted(std::span<const double> sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

}  // namespace

Stats summarize(std::span<const double> samples) {
  if (samples.empty()) throw std::invalid_argument("summarize: no samples");
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  Stats s;
  s.n = sorted.size();
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = quantile_sorted(sorted, 0.5);
  s.q1 = quantile_sorted(sorted, 0.25);
  s.q3 = quantile_sorted(sorted, 0.75);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(s.n);
  if (s.n > 1) {
    double sq = 0;
    for (double x : sorted) sq += (x - s.mean) * (x - s.mean);
    s.stdev = std::sqrt(sq / static_cast<double>(s.n - 1));
    s.cv = s.mean != 0 ? s.stdev / std::fabs(s.mean) : 0;
  }
  return s;
}

Stats scaled(const Stats& s, double k) {
  Stats out = s;
  for (double* v : {&out.median, &out.min, &out.max, &out.q1, &out.q3, &out.mean, &out.stdev}) *v *= k;
  return out;
}

}  // namespace tkprobe
