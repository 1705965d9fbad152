#pragma once
// How the l2 probe reads its latency map (probes/l2/README.md): each SM's line latencies split into
// a near and a far level at their widest gap, and SMs grouped by which lines they see near. Plain
// C++, so the host tests check it on made-up maps before any GPU is asked.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "src/stats.hpp"

namespace tkprobe::l2 {

inline constexpr double kMinLevelRatio = 1.15;  // two levels only where the far median is 15% above the near one
inline constexpr double kTrimShare = 0.02;      // the gap is sought inside the middle 96% of the lines
inline constexpr double kSameGroup = 0.9;       // SMs that agree on 90% of the lines share a partition
inline constexpr double kMostSms = 0.5;         // partitions are read from the map only where most SMs see two levels

struct Split {
  double threshold = 0;                    // a line is near when its latency is below this
  double near_cycles = 0, far_cycles = 0;  // each level's median
  double near_share = 0;                   // of the lines
  bool two_levels = false;
  std::vector<bool> near;                  // per line
};

// The widest gap between neighbouring sorted latencies (outside the outer kTrimShare at each end,
// so that a stray sample cannot make a level of its own) splits near from far.
inline Split split_levels(const std::vector<double>& cycles) {
  Split out;
  if (cycles.size() < 4) return out;
  std::vector<double> sorted = cycles;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t trim = static_cast<std::size_t>(kTrimShare * double(sorted.size()));
  std::size_t cut = trim;
  for (std::size_t i = trim; i + 1 < sorted.size() - trim; ++i) {
    if (sorted[i + 1] - sorted[i] > sorted[cut + 1] - sorted[cut]) cut = i;
  }
  out.threshold = 0.5 * (sorted[cut] + sorted[cut + 1]);
  std::vector<double> low, high;
  for (double c : cycles) {
    out.near.push_back(c < out.threshold);
    (c < out.threshold ? low : high).push_back(c);
  }
  if (low.empty() || high.empty()) return out;  // every latency the same: one level
  out.near_cycles = summarize(low).median;
  out.far_cycles = summarize(high).median;
  out.near_share = double(low.size()) / double(cycles.size());
  out.two_levels = out.far_cycles >= kMinLevelRatio * out.near_cycles;
  return out;
}

// The share of lines on which two near-sets agree.
inline double agreement(const std::vector<bool>& a, const std::vector<bool>& b) {
  std::size_t same = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) same += a[i] == b[i];
  return a.empty() ? 0 : double(same) / double(a.size());
}

struct Group {
  std::vector<int> members;      // indices into the near-sets given
  std::vector<bool> near;        // the first member's near-set, which the others are held to
  double min_agreement = 1;      // the least any member agrees with it
};

// In the order given (the probe gives SMs by SM id, so group 0 holds the lowest), each SM joins the
// first group whose near-set it agrees with on kSameGroup of the lines, or starts a group.
inline std::vector<Group> group_by_near_lines(const std::vector<std::vector<bool>>& near_sets) {
  std::vector<Group> groups;
  for (std::size_t i = 0; i < near_sets.size(); ++i) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return agreement(near_sets[i], g.near) >= kSameGroup; });
    if (it == groups.end()) {
      groups.push_back({{int(i)}, near_sets[i], 1});
    } else {
      it->members.push_back(int(i));
      it->min_agreement = std::min(it->min_agreement, agreement(near_sets[i], it->near));
    }
  }
  return groups;
}

// The groups of the SMs that see two levels, by their near lines (members index `splits`), or none
// where fewer than kMostSms of the SMs see two levels: then the map shows no partition at all, and
// grouping the rest by the widest gap of a single level would group them by noise.
inline std::vector<Group> partition_groups(const std::vector<Split>& splits) {
  std::vector<int> two_level;
  for (std::size_t i = 0; i < splits.size(); ++i)
    if (splits[i].two_levels) two_level.push_back(int(i));
  if (splits.empty() || double(two_level.size()) < kMostSms * double(splits.size())) return {};
  std::vector<std::vector<bool>> sets;
  for (int i : two_level) sets.push_back(splits[i].near);
  std::vector<Group> groups = group_by_near_lines(sets);
  for (Group& g : groups)
    for (int& m : g.members) m = two_level[m];
  return groups;
}

// The footprint ladder (latency against footprint, smallest first): the index of the first
// footprint whose latency is kMinLevelRatio above the smallest footprint's, where the lines the
// smallest footprint found stop being served as fast; -1 where none is.
inline int first_step(const std::vector<double>& latencies) {
  for (std::size_t i = 1; i < latencies.size(); ++i)
    if (latencies[i] >= kMinLevelRatio * latencies.front()) return int(i);
  return -1;
}

// The share of lines that exactly one of two groups sees near: 1 where each line is near to one
// partition's SMs and far to the other's.
inline double complementary_share(const Group& a, const Group& b) {
  std::size_t one = 0;
  for (std::size_t i = 0; i < a.near.size() && i < b.near.size(); ++i) one += a.near[i] != b.near[i];
  return a.near.empty() ? 0 : double(one) / double(a.near.size());
}

}  // namespace tkprobe::l2
