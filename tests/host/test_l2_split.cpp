#include <gtest/gtest.h>

#include <random>

#include "probes/l2/l2_split.hpp"

namespace l2 = tkprobe::l2;

namespace {

// A made-up SM's latencies: lines with `near[i]` at about `near_cycles`, the others at `far_cycles`,
// each with up to 3% noise, and two stray samples far above everything.
std::vector<double> latencies(const std::vector<bool>& near, double near_cycles, double far_cycles, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> noise(0.97, 1.03);
  std::vector<double> out;
  for (bool n : near) out.push_back((n ? near_cycles : far_cycles) * noise(rng));
  out[3] = 5000;
  out[7] = 4000;
  return out;
}

std::vector<bool> alternating_halves(int lines, bool invert) {
  std::vector<bool> out;
  for (int i = 0; i < lines; ++i) out.push_back(((i / 4) % 2 == 0) != invert);  // a line's partition: its 512 B block
  return out;
}

}  // namespace

TEST(L2Split, TwoLevelsSplitAtTheGapStraySamplesIgnored) {
  const auto near = alternating_halves(512, false);
  const l2::Split s = l2::split_levels(latencies(near, 250, 420, 1));
  EXPECT_TRUE(s.two_levels);
  EXPECT_NEAR(s.near_cycles, 250, 8);
  EXPECT_NEAR(s.far_cycles, 420, 13);
  EXPECT_NEAR(s.near_share, 0.5, 0.01);
  int wrong = 0;
  for (int i = 0; i < 512; ++i) wrong += i != 3 && i != 7 && s.near[i] != near[i];
  EXPECT_EQ(wrong, 0);
}

TEST(L2Split, OneLevelIsNotTwo) {
  const l2::Split s = l2::split_levels(latencies(std::vector<bool>(512, true), 280, 280, 2));
  EXPECT_FALSE(s.two_levels) << s.near_cycles << " vs " << s.far_cycles;
  EXPECT_FALSE(l2::split_levels(std::vector<double>(64, 280)).two_levels) << "every latency the same";
}

// Two partitions of SMs, each seeing the other's lines far: two groups, in the order the SMs came,
// whose near lines are each other's complement; a third pattern would be a third group.
TEST(L2Split, SmsGroupByTheLinesTheySeeNear) {
  std::vector<std::vector<bool>> sets;
  for (int sm = 0; sm < 8; ++sm) {
    sets.push_back(l2::split_levels(latencies(alternating_halves(512, sm % 3 == 2), 250, 420, 10 + sm)).near);
  }
  const auto groups = l2::group_by_near_lines(sets);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].members, (std::vector<int>{0, 1, 3, 4, 6, 7}));
  EXPECT_EQ(groups[1].members, (std::vector<int>{2, 5}));
  EXPECT_GT(groups[0].min_agreement, 0.99);
  EXPECT_GT(l2::complementary_share(groups[0], groups[1]), 0.99);
  sets.push_back(std::vector<bool>(512, true));
  EXPECT_EQ(l2::group_by_near_lines(sets).size(), 3u);
}

// Most SMs one level and two with a stray gap: no partition is read from the map, and the two are
// not grouped with the rest by noise. Most SMs two levels: groups of those SMs only.
TEST(L2Split, PartitionsOnlyWhereMostSmsSeeTwoLevels) {
  std::vector<l2::Split> splits;
  for (int sm = 0; sm < 10; ++sm) {
    const bool two = sm < 2;
    splits.push_back(l2::split_levels(latencies(alternating_halves(512, false), 250, two ? 420 : 260, 40 + sm)));
  }
  ASSERT_TRUE(splits[0].two_levels);
  ASSERT_FALSE(splits[5].two_levels);
  EXPECT_TRUE(l2::partition_groups(splits).empty());
  for (int sm = 2; sm < 6; ++sm)
    splits[sm] = l2::split_levels(latencies(alternating_halves(512, sm % 2 == 1), 250, 420, 60 + sm));
  const auto groups = l2::partition_groups(splits);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].members, (std::vector<int>{0, 1, 2, 4}));
  EXPECT_EQ(groups[1].members, (std::vector<int>{3, 5}));
}

TEST(L2Split, TheLadderStepsWhereLatencyRisesFifteenPercent) {
  EXPECT_EQ(l2::first_step({280, 282, 290, 410, 420, 650}), 3);
  EXPECT_EQ(l2::first_step({280, 285, 300}), -1);
  EXPECT_EQ(l2::first_step({280}), -1);
}
