#pragma once
// Pointer-chase chains for smem-latency and mem-latency: next[i] is the element the chase visits after
// element i. Plain C++, host-tested: every chain must be one cycle so the chase never gets stuck in a
// short loop that a cache-like effect could flatter.
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace tkprobe::chain {

// Word i links to word (i + stride) mod words: a fixed stride through the array.
inline std::vector<std::uint32_t> strided(std::uint32_t words, std::uint32_t stride_words) {
  std::vector<std::uint32_t> next(words);
  for (std::uint32_t i = 0; i < words; ++i) next[i] = (i + stride_words) % words;
  return next;
}

// A random single cycle through every word (Sattolo's algorithm).
inline std::vector<std::uint32_t> random_cycle(std::uint32_t words, std::mt19937_64& rng) {
  std::vector<std::uint32_t> order(words);
  std::iota(order.begin(), order.end(), 0u);
  for (std::uint32_t i = words - 1; i > 0; --i) {
    std::uniform_int_distribution<std::uint32_t> pick(0, i - 1);
    std::swap(order[i], order[pick(rng)]);
  }
  std::vector<std::uint32_t> next(words);
  for (std::uint32_t i = 0; i < words; ++i) next[order[i]] = order[(i + 1) % words];
  return next;
}

// Length of the cycle the chase starting at word 0 follows.
inline std::uint32_t cycle_length(const std::vector<std::uint32_t>& next) {
  std::uint32_t length = 0, at = 0;
  do {
    at = next[at];
    ++length;
  } while (at != 0 && length <= next.size());
  return length;
}

// Least-squares line through (x, y): the chase's cycles against its length.
struct Line {
  double slope, intercept, max_rel_residual;
};
inline Line fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  Line line{sxy / sxx, my - sxy / sxx * mx, 0};
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double residual = y[i] - (line.slope * x[i] + line.intercept);
    line.max_rel_residual = std::max(line.max_rel_residual, std::abs(residual) / y[i]);
  }
  return line;
}

}  // namespace tkprobe::chain
