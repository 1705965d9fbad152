#pragma once
// How the l2 probe reads its latency map (probes/l2/README.md), in plain C++ so that host tests check
// it on made-up maps before any GPU is asked.
//
// A line's latency from an SM is, to first order, the SM's own distance from the L2 plus the line's
// slice's, the same for every pair: take both out (each SM's mean, each line's mean) and what is left
// depends on the pair. Two partitions leave one pattern in that rest: the SMs of one half reach one
// half of the lines faster and the other half slower, and the other SMs the reverse. That pattern is
// the rest's first singular pair (found here by power iteration); the signs of its two vectors split
// the SMs and the lines in two, and its share of the rest's variance says how much of the rest it is.
// (The first reading, each SM's latencies split at their widest gap, found nothing on the H200: the
// halves lie ~30 cycles apart, 11%, inside each SM's spread of ~60.)
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "src/stats.hpp"

namespace tkprobe::l2 {

inline constexpr double kPatternShare = 0.5;  // two partitions where the pattern is at least half the rest
inline constexpr double kMinGap = 0.03;       // and far lies at least 3% above near
inline constexpr int kPowerIterations = 200;  // far more than the two leading singular values' gap needs

using Map = std::vector<std::vector<double>>;  // [sm][line]: cycles per dependent load

struct Group {
  std::vector<int> members;  // indices into the map's SMs
  std::vector<bool> near;    // per line: in the half this group reaches faster
};

struct Partitions {
  double pattern_share = 0;  // of the rest's variance, the pattern's
  double near_cycles = 0, far_cycles = 0;  // medians over pairs on the same side, on opposite sides
  std::vector<Group> groups;  // two where the pattern holds (group 0 holds the first SM), else none
};

namespace detail {

// The map less each SM's and each line's mean (plus the overall mean once): what depends on the pair.
inline Map interaction(const Map& m) {
  const std::size_t sms = m.size(), lines = m.front().size();
  std::vector<double> sm_mean(sms, 0), line_mean(lines, 0);
  double all = 0;
  for (std::size_t i = 0; i < sms; ++i)
    for (std::size_t j = 0; j < lines; ++j) {
      sm_mean[i] += m[i][j] / double(lines);
      line_mean[j] += m[i][j] / double(sms);
      all += m[i][j] / double(sms * lines);
    }
  Map r(sms, std::vector<double>(lines));
  for (std::size_t i = 0; i < sms; ++i)
    for (std::size_t j = 0; j < lines; ++j) r[i][j] = m[i][j] - sm_mean[i] - line_mean[j] + all;
  return r;
}

inline double normalize(std::vector<double>& v) {
  double n = 0;
  for (double x : v) n += x * x;
  n = std::sqrt(n);
  if (n > 0)
    for (double& x : v) x /= n;
  return n;
}

}  // namespace detail

// The two partitions the map shows, or none (groups empty) where the pattern is less than
// kPatternShare of the rest or its halves lie less than kMinGap apart.
inline Partitions find_partitions(const Map& m) {
  Partitions out;
  if (m.size() < 2 || m.front().size() < 2) return out;
  const Map r = detail::interaction(m);
  const std::size_t sms = r.size(), lines = r.front().size();
  double total = 0;
  for (const auto& row : r)
    for (double x : row) total += x * x;
  if (total <= 0) return out;
  // Start from the line pattern of the SM whose rest is largest: never orthogonal to the pattern.
  std::size_t start = 0;
  double largest = -1;
  for (std::size_t i = 0; i < sms; ++i) {
    double n = 0;
    for (double x : r[i]) n += x * x;
    if (n > largest) largest = n, start = i;
  }
  std::vector<double> v = r[start], u(sms);
  detail::normalize(v);
  double sigma = 0;
  for (int it = 0; it < kPowerIterations; ++it) {
    for (std::size_t i = 0; i < sms; ++i) {
      u[i] = 0;
      for (std::size_t j = 0; j < lines; ++j) u[i] += r[i][j] * v[j];
    }
    detail::normalize(u);
    std::fill(v.begin(), v.end(), 0.0);
    for (std::size_t i = 0; i < sms; ++i)
      for (std::size_t j = 0; j < lines; ++j) v[j] += r[i][j] * u[i];
    sigma = detail::normalize(v);
  }
  out.pattern_share = sigma * sigma / total;
  // Pairs whose signs agree see the pattern add, those that differ see it subtract; which of the two
  // is near is whichever is faster.
  std::vector<double> same, opposite;
  for (std::size_t i = 0; i < sms; ++i)
    for (std::size_t j = 0; j < lines; ++j) ((u[i] >= 0) == (v[j] >= 0) ? same : opposite).push_back(m[i][j]);
  if (same.empty() || opposite.empty()) return out;
  const double same_cycles = summarize(same).median, opposite_cycles = summarize(opposite).median;
  const bool same_is_near = same_cycles <= opposite_cycles;
  out.near_cycles = std::min(same_cycles, opposite_cycles);
  out.far_cycles = std::max(same_cycles, opposite_cycles);
  if (out.pattern_share < kPatternShare || out.far_cycles < (1 + kMinGap) * out.near_cycles) return out;
  const bool first_side = u[0] >= 0;
  out.groups.resize(2);
  for (int g = 0; g < 2; ++g) {
    const bool side = (g == 0) == first_side;  // group 0: the first SM's side
    for (std::size_t i = 0; i < sms; ++i)
      if ((u[i] >= 0) == side) out.groups[g].members.push_back(int(i));
    for (std::size_t j = 0; j < lines; ++j) out.groups[g].near.push_back(((v[j] >= 0) == side) == same_is_near);
  }
  return out;
}

// The footprint ladder (latency against footprint, smallest first): the index of the first
// footprint whose latency is kLevelStep above the smallest footprint's, where the lines the smallest
// footprint found stop being served as fast; -1 where none is.
inline constexpr double kLevelStep = 1.15;
inline int first_step(const std::vector<double>& latencies) {
  for (std::size_t i = 1; i < latencies.size(); ++i)
    if (latencies[i] >= kLevelStep * latencies.front()) return int(i);
  return -1;
}

}  // namespace tkprobe::l2
