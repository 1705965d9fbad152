// The forward's causal orders (kernels/attention/work_order.hpp): every item once; snaked
// balances the blocks' work better than plain longest-first across every head, and chunked about
// as well as plain longest-first with far fewer heads in flight per wave.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "kernels/attention/work_order.hpp"

namespace aw = attention;

namespace {

struct Case {
  int matrices, q_blocks, block_q, seq;
};
// The sweep's causal shapes on 132 SMs (16k tokens: B x H matrices, 192-row items at D = 64,
// 128 at D = 128), then odd ones: a short last chunk, a chunk longer than two waves.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (int seq : {1000, 1024, 4096, 4097, 16384}) {
    const int batch = std::max(1, 16384 / seq);
    out.push_back({batch * 32, (seq + 191) / 192, 192, seq});
    out.push_back({batch * 16, (seq + 127) / 128, 128, seq});
  }
  out.push_back({7, 3, 128, 300});
  out.push_back({3, 300, 128, 300 * 128});
  return out;
}
constexpr int kGrid = 132;
constexpr int kPerItem = 1;  // a tile's worth of per-item cost (the prologue, the output)

// Longest first across every head without the snake: what the snake is measured against.
aw::WorkOrder plain_longest_first(int t, int matrices) { return {t % matrices, t / matrices}; }

// Key tiles of a causal item, as the forward's item() counts them (its first block padded).
int tiles(int order, const Case& c) {
  const int last_row = (c.q_blocks - order) * c.block_q - aw::padding_tiles(c.seq, c.block_q, 64) * 64;
  return (std::min(c.seq, last_row) + 127) / 128;
}

// The heaviest block's work over the mean, for order f(t).
template <class F>
double imbalance(const Case& c, F f) {
  std::vector<long> load(kGrid, 0);
  long total = 0;
  for (int t = 0; t < c.matrices * c.q_blocks; ++t) {
    const int w = tiles(f(t).order, c) + kPerItem;
    load[t % kGrid] += w;
    total += w;
  }
  return double(*std::max_element(load.begin(), load.end())) * kGrid / double(total);
}

std::string describe(const Case& c) {
  return std::to_string(c.matrices) + " matrices x " + std::to_string(c.q_blocks) + " blocks of " +
         std::to_string(c.block_q) + ", N = " + std::to_string(c.seq);
}

}  // namespace

TEST(AttentionWorkOrder, CausalItemsComeOnceEach) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(describe(c));
    for (const bool chunks : {false, true}) {
      std::set<std::pair<int, int>> seen;
      for (int t = 0; t < c.matrices * c.q_blocks; ++t) {
        const aw::WorkOrder o = chunks ? aw::chunked(t, kGrid, c.matrices, c.q_blocks)
                                       : aw::snaked(t, kGrid, c.matrices, c.q_blocks);
        ASSERT_GE(o.matrix, 0);
        ASSERT_LT(o.matrix, c.matrices);
        ASSERT_GE(o.order, 0);
        ASSERT_LT(o.order, c.q_blocks);
        EXPECT_TRUE(seen.insert({o.matrix, o.order}).second) << (chunks ? "chunked" : "snaked") << " item " << t;
      }
    }
  }
}

// The snake carries no block over what plain longest-first gave it, and less on the sweep's
// longest shapes.
TEST(AttentionWorkOrder, TheSnakeBalancesTheBlocks) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(describe(c));
    const double snake = imbalance(c, [&](int t) { return aw::snaked(t, kGrid, c.matrices, c.q_blocks); });
    const double plain = imbalance(c, [&](int t) { return plain_longest_first(t, c.matrices); });
    EXPECT_LE(snake, plain + 1e-9);
    if (c.seq == 16384) {
      EXPECT_LT(snake, plain - 0.01);
    }
  }
}

// No block carries more than 0.5% over what plain longest-first across every head gave it (the
// snake across every head does better at N = 16384: chunks trade that for L2), and each wave of
// the grid reads at most two chunks' heads (about 2G / q_blocks each).
TEST(AttentionWorkOrder, CausalChunksBalanceTheBlocksAndShareHeads) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(describe(c));
    const auto chunked = [&](int t) { return aw::chunked(t, kGrid, c.matrices, c.q_blocks); };
    const auto across_heads = [&](int t) { return plain_longest_first(t, c.matrices); };
    EXPECT_LE(imbalance(c, chunked), imbalance(c, across_heads) + 0.005);
    const int chunk_matrices = std::max(1, 2 * kGrid / c.q_blocks);
    for (int wave = 0; wave * kGrid < c.matrices * c.q_blocks; ++wave) {
      std::set<int> heads;
      for (int t = wave * kGrid; t < std::min(c.matrices * c.q_blocks, (wave + 1) * kGrid); ++t)
        heads.insert(chunked(t).matrix);
      EXPECT_LE(int(heads.size()), 2 * chunk_matrices) << "wave " << wave;
    }
  }
}

// When a chunk's heads fill exactly two waves, every block's pair sums to the same length.
TEST(AttentionWorkOrder, FullChunksPairLongestWithShortest) {
  const Case c{33 * 4, 8, 128, 1024};  // 33 heads x 8 blocks = 264 = 2 x 132
  for (int chunk = 0; chunk < 4; ++chunk)
    for (int lane = 0; lane < kGrid; ++lane) {
      const int t = chunk * 2 * kGrid + lane;
      const int a = aw::chunked(t, kGrid, c.matrices, c.q_blocks).order;
      const int b = aw::chunked(t + kGrid, kGrid, c.matrices, c.q_blocks).order;
      EXPECT_EQ(tiles(a, c) + tiles(b, c), c.q_blocks + 1) << chunk << " " << lane;
    }
}
