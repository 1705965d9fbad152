#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

#include "probes/l2/l2_split.hpp"

namespace l2 = tkprobe::l2;

namespace {

// A made-up map: each SM at its own distance from the L2 (up to 40 cycles), each line in a slice of
// its own distance (up to 20), with up to 8 cycles of noise; where `gap` > 0, SMs of the upper half
// (by a shuffled order) and lines of their half meet `gap` cycles faster than across halves.
l2::Map made_up_map(int sms, int lines, double gap, unsigned seed, std::vector<int>* sm_half = nullptr,
                    std::vector<int>* line_half = nullptr) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> sm_off(sms), line_off(lines);
  std::vector<int> sh(sms), lh(lines);
  for (int i = 0; i < sms; ++i) sm_off[i] = 40 * u(rng), sh[i] = u(rng) < 0.5;
  for (int j = 0; j < lines; ++j) line_off[j] = 20 * u(rng), lh[j] = u(rng) < 0.5;
  l2::Map m(sms, std::vector<double>(lines));
  for (int i = 0; i < sms; ++i)
    for (int j = 0; j < lines; ++j) m[i][j] = 250 + sm_off[i] + line_off[j] + 8 * u(rng) + (sh[i] == lh[j] ? 0 : gap);
  if (sm_half) *sm_half = sh;
  if (line_half) *line_half = lh;
  return m;
}

}  // namespace

// Two halves 30 cycles apart under 40 cycles of SM spread and 20 of line spread (the H200's map):
// found, every SM and line on its side, the levels ~30 apart.
TEST(L2Split, TwoPartitionsShowAsOnePatternInThePairsPart) {
  std::vector<int> sm_half, line_half;
  const l2::Map m = made_up_map(132, 512, 30, 1, &sm_half, &line_half);
  const l2::Partitions p = l2::find_partitions(m);
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_GT(p.pattern_share, 0.8);
  EXPECT_NEAR(p.far_cycles - p.near_cycles, 30, 6);
  EXPECT_EQ(p.groups[0].members.front(), 0) << "group 0 holds the first SM";
  EXPECT_EQ(p.groups[0].members.size() + p.groups[1].members.size(), 132u);
  for (const l2::Group& g : p.groups) {
    for (int i : g.members) EXPECT_EQ(sm_half[i], sm_half[g.members.front()]) << "an SM on the wrong side";
    for (int j = 0; j < 512; ++j) {
      EXPECT_EQ(g.near[j], line_half[j] == sm_half[g.members.front()]) << "line " << j;
    }
  }
  for (int j = 0; j < 512; ++j) EXPECT_NE(p.groups[0].near[j], p.groups[1].near[j]) << "each line near to one group";
}

// No pattern in the pair's part (only SM and line offsets and noise): no partitions, however large
// the offsets are.
TEST(L2Split, OffsetsAndNoiseAloneAreNoPartition) {
  const l2::Partitions p = l2::find_partitions(made_up_map(132, 512, 0, 2));
  EXPECT_TRUE(p.groups.empty());
  EXPECT_LT(p.pattern_share, l2::kPatternShare);
  EXPECT_TRUE(l2::find_partitions(l2::Map(8, std::vector<double>(64, 280))).groups.empty()) << "every latency equal";
}

// The H200's own map (180acf5's `tkprobe l2 --map`, its first 64 of 2048 lines: `cut -d, -f1-65`;
// a row per SM: its id, then cycles per load): two halves of SMs in TPC pairs, ~30 cycles apart.
TEST(L2Split, TheH200MapHasTwoHalves) {
  std::ifstream in(std::string(TKPROBE_SOURCE_DIR) + "/tests/host/data/l2_map_h200.csv");
  l2::Map m;
  std::vector<int> smids;
  for (std::string line; std::getline(in, line);) {
    std::stringstream fields(line);
    std::string f;
    std::getline(fields, f, ',');
    smids.push_back(std::stoi(f));
    m.emplace_back();
    while (std::getline(fields, f, ',')) m.back().push_back(std::stod(f));
  }
  ASSERT_EQ(m.size(), 132u);
  const l2::Partitions p = l2::find_partitions(m);
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_GT(p.pattern_share, 0.7);
  EXPECT_NEAR(p.near_cycles, 268, 10);
  EXPECT_NEAR(p.far_cycles, 301, 10);
  EXPECT_EQ(p.groups[0].members.size(), 62u);
  const auto in_group = [&](int g, int smid) {
    const auto& mm = p.groups[g].members;
    return std::any_of(mm.begin(), mm.end(), [&](int i) { return smids[i] == smid; });
  };
  for (int smid : {0, 1, 4, 5, 6, 7}) EXPECT_TRUE(in_group(0, smid)) << smid;
  for (int smid : {2, 3, 8, 9, 10, 11}) EXPECT_TRUE(in_group(1, smid)) << smid;
}

TEST(L2Split, TheLadderStepsWhereLatencyRisesFifteenPercent) {
  EXPECT_EQ(l2::first_step({280, 282, 290, 410, 420, 650}), 3);
  EXPECT_EQ(l2::first_step({280, 285, 300}), -1);
  EXPECT_EQ(l2::first_step({280}), -1);
}
