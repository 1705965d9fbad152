// Measured residency from block spans: the blocks that truly overlapped on each SM.
#include <gtest/gtest.h>

#include "src/residency.hpp"

using tkprobe::BlockSpan;
using tkprobe::concurrent_blocks_per_sm;

TEST(Residency, CountsOverlapPerSmAndTakesTheLeast) {
  // SM 0: three blocks at once; SM 1: two at once, then a third after the first ended.
  const std::vector<BlockSpan> spans{{0, 0, 0, 100}, {0, 0, 5, 100}, {0, 0, 10, 90},
                                     {1, 0, 0, 50},  {1, 0, 0, 100}, {1, 0, 60, 120}};
  EXPECT_EQ(concurrent_blocks_per_sm(spans), 2);
}

TEST(Residency, TouchingSpansDoNotOverlap) {
  const std::vector<BlockSpan> spans{{3, 0, 0, 50}, {3, 0, 50, 100}};
  EXPECT_EQ(concurrent_blocks_per_sm(spans), 1);
  EXPECT_EQ(concurrent_blocks_per_sm({}), 0);
}
