// The register tile and vector layouts (kernels/tk/layout/rt_layout.hpp): every map covers its
// tile or vector exactly once, agrees with the mma.sync / wgmma fragments (fragments.hpp), a
// col_l tile is the transpose of a row_l one, the vectors along either axis of either tile
// layout hold the entries the reductions and broadcasts need in the scalars they use, and the
// ldmatrix / stmatrix lane addresses put each matrix where the tile's pairs want it (the PTX
// ISA's fragment rule, simulated).
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "kernels/tk/layout/rt_layout.hpp"

using namespace tk::layout;

namespace {

constexpr int kLanes = 32;
constexpr std::pair<int, int> kShapes[] = {{16, 16}, {32, 64}, {48, 32}};

}  // namespace

TEST(RtLayout, EachTileElementOnce) {
  for (const auto& [rows, cols] : kShapes)
    for (const RtLayout l : {RtLayout::row, RtLayout::col}) {
      std::set<std::pair<int, int>> seen;
      const int per_lane = rows * cols / kLanes;
      for (int lane = 0; lane < kLanes; ++lane)
        for (int f = 0; f < per_lane; ++f) {
          const Coord c = rt_element(lane, f, cols, l);
          EXPECT_TRUE(c.row >= 0 && c.row < rows && c.col >= 0 && c.col < cols) << rows << "x" << cols;
          seen.insert({c.row, c.col});
        }
      EXPECT_EQ(seen.size(), std::size_t(rows * cols)) << rows << "x" << cols;
    }
}

TEST(RtLayout, ColLayoutIsTheTranspose) {
  for (int lane = 0; lane < kLanes; ++lane)
    for (int p = 0; p < kPairsPerSubtile; ++p)
      for (int e = 0; e < 2; ++e) {
        const Coord r = rt_pair(lane, p, e, RtLayout::row), c = rt_pair(lane, p, e, RtLayout::col);
        EXPECT_EQ(c, (Coord{r.col, r.row}));
      }
  // A whole tile: lane 5 (g 1, t 1) scalar 29 is pair 2 of subtile (1, 1), element y: row
  // 8 + 2t + 1, column g within the subtile.
  EXPECT_EQ(rt_element(5, 2 * (4 * 3 + 2) + 1, 32, RtLayout::col), (Coord{16 + 11, 16 + 1}));
}

TEST(RtLayout, RowTileIsTheMmaAFragment) {
  for (int lane = 0; lane < kLanes; ++lane)
    for (int reg = 0; reg < 4; ++reg)
      for (int e = 0; e < 2; ++e) EXPECT_EQ(rt_element(lane, 2 * reg + e, 16, RtLayout::row), a_fragment(lane, reg, e, 2));
}

TEST(RtLayout, ColTileIsTheMmaBFragment) {
  // Columns 8h..8h+7 of a 16x16 col_l tile (K x N): B register r is pair h + 2r.
  for (int lane = 0; lane < kLanes; ++lane)
    for (int h = 0; h < 2; ++h)
      for (int r = 0; r < 2; ++r)
        for (int e = 0; e < 2; ++e) {
          const Coord b = b_fragment(lane, r, e, 2);
          EXPECT_EQ(rt_pair(lane, h + 2 * r, e, RtLayout::col), (Coord{b.row, b.col + 8 * h}));
          // A row_l N x K tile holds the same registers for B^T.
          EXPECT_EQ(rt_pair(lane, h + 2 * r, e, RtLayout::row), (Coord{b.col + 8 * h, b.row}));
        }
}

TEST(RtLayout, FloatTileIsTheAccumulator) {
  // A float row_l tile 16 rows high, in memory order, is wgmma's (and mma.sync's) accumulator.
  for (const int cols : {16, 64, 256})
    for (int lane = 0; lane < kLanes; ++lane)
      for (int v = 0; v < cols / 2; ++v) EXPECT_EQ(rt_element(lane, v, cols, RtLayout::row), accumulator(lane, v));
}

TEST(RvLayout, VectorsLineUpWithTheRowTile) {
  for (const int n : {16, 64})
    for (const RvLayout l : {RvLayout::group, RvLayout::quad}) {
      const int per_lane = n / kSubtile * rv_pairs_per_16(l) * 2;
      std::set<int> seen;
      for (int lane = 0; lane < kLanes; ++lane)
        for (int f = 0; f < per_lane; ++f) {
          const int entry = rv_entry(lane, f, l);
          EXPECT_TRUE(entry >= 0 && entry < n);
          seen.insert(entry);
          // group: scalar f is the row of the tile's pairs with p % 2 = f % 2 in subtile row f / 2;
          // quad: the column of pairs with p / 2 = f / 2 % 2 and element f % 2 in subtile column f / 4.
          const Coord c = l == RvLayout::group ? rt_element(lane, 2 * (f % 2), n, RtLayout::row)
                                               : rt_element(lane, 2 * (2 * (f / 2 % 2)) + f % 2, n, RtLayout::row);
          EXPECT_EQ(entry % kSubtile, l == RvLayout::group ? c.row : c.col);
        }
      // Each lane holds its share, the warp covers the vector.
      EXPECT_EQ(seen.size(), std::size_t(n));
    }
  EXPECT_EQ(rv_entry(9, 3, RvLayout::group), 16 + 2 + 8);
  EXPECT_EQ(rv_entry(9, 7, RvLayout::quad), 16 + 8 + 2 + 1);
}

TEST(LdmatrixLayout, LaneAddressesDeliverTheTilePairs) {
  // ldmatrix .x4: register m of lane l holds, of the 8 rows that lanes 8m..8m+7 address,
  // row g columns 2t, 2t+1; with .trans, rows 2t, 2t+1 column g (PTX ISA 9.7.13.4.15).
  for (const RtLayout l : {RtLayout::row, RtLayout::col})
    for (int lane = 0; lane < kLanes; ++lane)
      for (int m = 0; m < 4; ++m)
        for (int e = 0; e < 2; ++e) {
          const int g = group_of(lane), t = thread_in_group(lane);
          Coord got;
          if (l == RtLayout::row) {
            const Coord start = ldmatrix_row(8 * m + g, l);
            got = {start.row, start.col + 2 * t + e};
          } else {
            const Coord start = ldmatrix_row(8 * m + 2 * t + e, l);
            got = {start.row, start.col + g};
          }
          EXPECT_EQ(got, rt_pair(lane, m, e, l)) << "lane " << lane << " matrix " << m;
        }
  // Every lane addresses a distinct 16-byte row, 8-element aligned.
  for (const RtLayout l : {RtLayout::row, RtLayout::col}) {
    std::set<std::pair<int, int>> rows;
    for (int lane = 0; lane < kLanes; ++lane) {
      const Coord c = ldmatrix_row(lane, l);
      EXPECT_EQ(c.col % 8, 0);
      rows.insert({c.row, c.col});
    }
    EXPECT_EQ(rows.size(), std::size_t(kLanes));
  }
}

TEST(RvLayout, AlongEachAxisOfEachTileLayout) {
  // A lane's g picks a row_l tile's rows and a col_l tile's columns (group_vl), t the other.
  EXPECT_EQ(rv_layout_along(RtLayout::row, Axis::row), RvLayout::group);
  EXPECT_EQ(rv_layout_along(RtLayout::row, Axis::col), RvLayout::quad);
  EXPECT_EQ(rv_layout_along(RtLayout::col, Axis::row), RvLayout::quad);
  EXPECT_EQ(rv_layout_along(RtLayout::col, Axis::col), RvLayout::group);
  EXPECT_EQ(rv_replica_bits(RvLayout::group), 0b00011);
  EXPECT_EQ(rv_replica_bits(RvLayout::quad), 0b11100);
}

namespace {

// The row (Axis::row) or column index of element e of pair p of `lane` within its subtile.
int line_of(int lane, int p, int e, RtLayout tile, Axis axis) {
  const Coord c = rt_pair(lane, p, e, tile);
  return axis == Axis::row ? c.row : c.col;
}

}  // namespace

TEST(RvLayout, ScalarForPairHoldsThatElementsRowOrColumn) {
  // What the reductions and broadcasts rely on: scalar rv_scalar_for_pair(p, e) of block b of
  // the vector along an axis holds entry 16 b + (the element's row or column in its subtile).
  for (const RtLayout tile : {RtLayout::row, RtLayout::col})
    for (const Axis axis : {Axis::row, Axis::col}) {
      const RvLayout v = rv_layout_along(tile, axis);
      const int per_block = 2 * rv_pairs_per_16(v);
      for (int lane = 0; lane < kLanes; ++lane)
        for (int p = 0; p < kPairsPerSubtile; ++p) {
          for (int e = 0; e < 2; ++e) {
            const int s = rv_scalar_for_pair(p, e, v);
            EXPECT_TRUE(s >= 0 && s < per_block);
            for (int b = 0; b < 4; ++b)
              EXPECT_EQ(rv_entry(lane, per_block * b + s, v), kSubtile * b + line_of(lane, p, e, tile, axis))
                  << "lane " << lane << " pair " << p << " element " << e;
          }
          // A pair's elements take one scalar twice or one vector pair {x, y} in order.
          const int s0 = rv_scalar_for_pair(p, 0, v), s1 = rv_scalar_for_pair(p, 1, v);
          EXPECT_TRUE(s0 == s1 || (s0 % 2 == 0 && s1 == s0 + 1)) << "pair " << p;
        }
    }
  // A col_l tile's rows are quad_vl: lane 6 (g 1, t 2) pair 3 element 1 is row 8 + 4 + 1,
  // scalar 3 of its block.
  EXPECT_EQ(rv_scalar_for_pair(3, 1, rv_layout_along(RtLayout::col, Axis::row)), 3);
  EXPECT_EQ(rv_entry(6, 3, RvLayout::quad), 13);
  EXPECT_EQ(rt_pair(6, 3, 1, RtLayout::col).row, 13);
}

TEST(RvLayout, ReplicaBitsJoinEveryLaneOfARowOrColumn) {
  // For every row (column) of a subtile, the lanes holding tile elements on it and the lanes
  // holding its vector entry are the same set: one lane and every lane that differs from it in
  // rv_replica_bits only (a butterfly over those bits reaches exactly them, each once).
  for (const RtLayout tile : {RtLayout::row, RtLayout::col})
    for (const Axis axis : {Axis::row, Axis::col}) {
      const RvLayout v = rv_layout_along(tile, axis);
      const int bits = rv_replica_bits(v), per_block = 2 * rv_pairs_per_16(v);
      for (int entry = 0; entry < kSubtile; ++entry) {
        std::set<int> in_tile, in_vector;
        for (int lane = 0; lane < kLanes; ++lane) {
          for (int p = 0; p < kPairsPerSubtile; ++p)
            for (int e = 0; e < 2; ++e)
              if (line_of(lane, p, e, tile, axis) == entry) in_tile.insert(lane);
          for (int f = 0; f < per_block; ++f)
            if (rv_entry(lane, f, v) == entry) in_vector.insert(lane);
        }
        EXPECT_EQ(in_tile, in_vector) << "entry " << entry;
        ASSERT_FALSE(in_tile.empty());
        const int first = *in_tile.begin();
        std::set<int> coset;
        for (int lane = 0; lane < kLanes; ++lane)
          if (((lane ^ first) & ~bits) == 0) coset.insert(lane);
        EXPECT_EQ(in_tile, coset) << "entry " << entry;
      }
      // The lanes that share a vector scalar hold the same entry in it.
      for (int lane = 0; lane < kLanes; ++lane)
        for (int m = 1; m < kLanes; m *= 2) {
          if ((bits & m) == 0) continue;
          for (int f = 0; f < per_block; ++f) EXPECT_EQ(rv_entry(lane ^ m, f, v), rv_entry(lane, f, v));
        }
    }
}
