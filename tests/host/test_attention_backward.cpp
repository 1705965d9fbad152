// The attention backward's host side: its FLOP count, its refusals, and the work split of the
// Hopper kernels (kernels/attention/backward_schedule.hpp) simulated for every key and query of
// every work item, with as many keys as queries, more or fewer: each attended (query, key) pair
// is visited exactly once by each kernel, no item starts past the queries' or keys' end, every
// scratch read lies inside the padded vectors, and the masks cover every pair not attended.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/backward_schedule.hpp"
#include "kernels/tk/layout/rt_layout.hpp"

using attention::DqPath;
using attention::Shape;
namespace bw = attention::backward;

namespace {

bw::Schedule schedule(int batch, int heads, int kv_heads, int queries, int keys, bool causal) {
  return {batch, heads, kv_heads, queries, attention::Mask{keys, keys - queries, causal}};
}

// (queries, keys): as many of each, then more queries than keys and fewer, few of them multiples
// of a tile. With a causal mask, 1000 x 65 and 300 x 64 leave whole query blocks no key, and
// 1000 x 65, 200 x 63 start the key blocks' first query tiles past the first.
std::vector<std::pair<int, int>> lengths() {
  std::vector<std::pair<int, int>> out;
  for (int seq : {1, 7, 63, 64, 65, 100, 127, 128, 129, 130, 257, 1000}) out.push_back({seq, seq});
  for (auto [queries, keys] : {std::pair{7, 1}, {200, 63}, {129, 100}, {300, 64}, {257, 130}, {1000, 65}, {192, 128}}) {
    out.push_back({queries, keys});
    out.push_back({keys, queries});
  }
  return out;
}

std::vector<bw::Schedule> schedules() {
  std::vector<bw::Schedule> out;
  for (auto [queries, keys] : lengths())
    for (bool causal : {false, true})
      for (auto [batch, heads, kv_heads] : {std::tuple{1, 1, 1}, {2, 8, 2}, {3, 5, 1}, {1, 3, 3}})
        out.push_back(schedule(batch, heads, kv_heads, queries, keys, causal));
  return out;
}

std::string describe(const bw::Schedule& s) {
  return "B=" + std::to_string(s.batch) + " H=" + std::to_string(s.heads) + " HKV=" + std::to_string(s.kv_heads) +
         " Nq=" + std::to_string(s.seq) + " Nk=" + std::to_string(s.keys()) + (s.mask.causal ? " causal" : "");
}

}  // namespace

TEST(AttentionBackward, FlopsAreTwoAndAHalfForwardPasses) {
  for (const Shape& s : {Shape{1, 1, 1, 1024, 64, false}, Shape{2, 8, 2, 4097, 128, true}, Shape{1, 16, 16, 16384, 128, false}}) {
    EXPECT_DOUBLE_EQ(attention::flops_backward(s), 2.5 * attention::flops(s));
  }
  // Five products of 2 N^2 D per (batch, query head), half of them when causal.
  EXPECT_DOUBLE_EQ(attention::flops_backward({1, 1, 1, 1024, 64, false}), 10.0 * 1024 * 1024 * 64);
  EXPECT_DOUBLE_EQ(attention::flops_backward({1, 1, 1, 1024, 64, true}), 5.0 * 1024 * 1024 * 64);
}

// Refused before anything touches the GPU, with refusal()'s words.
TEST(AttentionBackward, RefusesWhatTheForwardRefuses) {
  const attention::BackwardTensors none{};
  const auto message = [&](Shape s) {
    try {
      attention::Backward b(none, s);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message({1, 4, 4, 128, 80, false}).find("head dim = 80: give 64, 96, 128 or 256"), std::string::npos);
  EXPECT_NE(message({1, 4, 4, 128, 96, false}).find("head dim = 96: the backward takes 64 or 128"), std::string::npos);
  EXPECT_NE(message({1, 4, 3, 128, 64, false}).find("multiple of the key/value heads"), std::string::npos);
  EXPECT_NE(message({1, 4, 4, 0, 64, false}).find("seq = 0: give a positive number"), std::string::npos);
}

// The preprocess and the conversion find each scratch row's query (dense_query_row): row r of
// matrix m at m x padded(N) + r, the queries from it on in its block, pad rows none.
TEST(AttentionBackward, ScratchRowsFindTheirQueries) {
  for (int n : {1, 100, 128, 129, 1000}) {
    const std::size_t rows = 3 * std::size_t(bw::padded(n));
    for (std::size_t g = 0; g < rows; ++g) {
      const bw::QueryRow q = bw::dense_query_row(n, g);
      const int r = int(g % bw::padded(n));
      ASSERT_EQ(q.matrix, int(g / bw::padded(n)));
      ASSERT_EQ(q.row, r);
      ASSERT_EQ(q.real(), r < n) << "n " << n << " row " << r;
      ASSERT_EQ(q.queries_left, n - r);
    }
  }
}

TEST(AttentionBackward, ScratchIsPaddedForEveryTile) {
  for (int seq : {1, 64, 127, 128, 129, 16384}) {
    EXPECT_EQ(bw::padded(seq) % bw::kRowPad, 0);
    EXPECT_GE(bw::padded(seq), seq);
    EXPECT_LT(bw::padded(seq) - seq, bw::kRowPad);
  }
  EXPECT_EQ(bw::scratch_floats(2, 8, 100), 2u * 2 * 8 * 128);
}

// dK/dV items: each (key/value matrix, key block) once, none past the keys' end; each item's
// steps visit, for every query head of its group, query tiles that start before the queries' end
// and lie inside the padded scratch, and cover every (query, key) pair of its keys that is
// attended exactly once; a tile holding a pair not attended is masked.
// At every step size the kernels take (kv_step_queries); staggered (the reducing path) as well:
// the same tiles in another order.
TEST(AttentionBackward, KeyItemsVisitEveryAttendedPairOnce) {
  for (auto [queries, staggered] : {std::pair{bw::kv_step_queries(128), false}, {bw::kv_step_queries(64), false},
                                    {bw::kv_step_queries(128), true}, {bw::kv_step_queries(64), true}})
  for (const bw::Schedule& s : schedules()) {
    SCOPED_TRACE(describe(s) + " step " + std::to_string(queries) + (staggered ? " staggered" : ""));
    const int kv_blocks = bw::ceil_div(s.keys(), bw::kKvBlock);
    std::set<std::pair<int, int>> items;
    int last_steps = 1 << 30;
    for (int t = 0; t < bw::kv_items(s); ++t) {
      const bw::KvItem it = bw::kv_item(s, t, queries, staggered);
      EXPECT_TRUE(items.insert({it.kvm, it.kv_block}).second) << "item " << t << " repeats";
      ASSERT_LT(it.kvm, s.batch * s.kv_heads);
      ASSERT_LT(it.kv_block * bw::kKvBlock, s.keys()) << "no key block wholly past the keys";
      ASSERT_GE(it.steps, 1);
      if (s.mask.causal) {
        if (bw::causal_order(t, s.batch * s.kv_heads, kv_blocks).order == 0 && it.steps > last_steps) {
          last_steps = 1 << 30;  // a new group of heads
        }
        EXPECT_LE(it.steps, last_steps) << "causal items go longest first within a group";
        last_steps = it.steps;
      }
      const int key0 = it.kv_block * bw::kKvBlock, key_end = std::min(s.keys(), key0 + bw::kKvBlock);
      // Visits of (query head of the group, query, key - key0).
      std::vector<int> visits(std::size_t(s.group()) * s.seq * bw::kKvBlock, 0);
      const auto at = [&](int head, int query, int key) {
        return (std::size_t(head) * s.seq + query) * bw::kKvBlock + key - key0;
      };
      std::set<std::pair<int, int>> visited;  // (query matrix, query tile)
      for (int step = 0; step < it.steps; ++step) {
        const int qm = it.qm(step), tile = it.q_tile(step), query0 = tile * queries;
        EXPECT_TRUE(visited.insert({qm, tile}).second) << "step " << step << " repeats a tile";
        ASSERT_EQ(qm / s.heads, it.kvm / s.kv_heads) << "same batch";
        ASSERT_EQ(qm % s.heads / s.group(), it.kvm % s.kv_heads) << "a query head of the item's group";
        ASSERT_GE(query0, 0);
        ASSERT_LT(query0, s.seq) << "no query tile wholly past the queries";
        EXPECT_LE(query0 + queries, bw::padded(s.seq)) << "inside the padded scratch";
        const int head = qm % s.heads % s.group();
        for (int query = query0; query < std::min(s.seq, query0 + queries); ++query)
          for (int key = key0; key < key_end; ++key) ++visits[at(head, query, key)];
        for (int warp_key0 = key0; warp_key0 < key0 + bw::kKvBlock; warp_key0 += 16) {
          bool unattended = false;
          for (int key = warp_key0; key < warp_key0 + 16; ++key)
            for (int query = query0; query < query0 + queries; ++query)
              unattended |= query < s.seq && !s.mask.attends(query, key);
          if (unattended) {
            EXPECT_TRUE(s.mask.needs_mask(query0, warp_key0, 16)) << "keys " << warp_key0 << ".. query tile " << tile;
          }
        }
      }
      for (int head = 0; head < s.group(); ++head)
        for (int query = 0; query < s.seq; ++query)
          for (int key = key0; key < key_end; ++key) {
            const int n = visits[at(head, query, key)];
            if (s.mask.attends(query, key) && n != 1) {
              FAIL() << "head " << head << " query " << query << " key " << key << ": " << n << " visits";
            }
          }
    }
    EXPECT_EQ(int(items.size()), s.batch * s.kv_heads * kv_blocks);
  }
}

// dQ items: each (query matrix, query block) once, none past the queries' end, reading its
// group's key/value matrix; the key tiles walked start before the keys' end and cover every key
// its queries attend exactly once; the scratch rows read lie inside the padding; a key tile
// holding a pair not attended is masked for the warp's 16 rows.
TEST(AttentionBackward, QueryItemsVisitEveryAttendedPairOnce) {
  const int step = bw::kQStepKeys;
  for (const bw::Schedule& s : schedules()) {
    SCOPED_TRACE(describe(s));
    std::set<std::pair<int, int>> items;
    int last_tiles = 1 << 30;
    for (int t = 0; t < bw::q_items(s); ++t) {
      const bw::QItem it = bw::q_item(s, t);
      EXPECT_TRUE(items.insert({it.qm, it.q_block}).second) << "item " << t << " repeats";
      ASSERT_LT(it.qm, s.batch * s.heads);
      ASSERT_LT(it.q_block * bw::kQBlock, s.seq) << "no query block wholly past the queries";
      EXPECT_EQ(it.kvm, it.qm / s.heads * s.kv_heads + it.qm % s.heads / s.group());
      EXPECT_LE((it.q_block + 1) * bw::kQBlock, bw::padded(s.seq)) << "inside the padded scratch";
      ASSERT_GE(it.tiles, 0);
      EXPECT_LT((it.tiles - 1) * step, s.keys()) << "no key tile wholly past the keys";
      if (s.mask.causal) {
        if (bw::causal_order(t, s.batch * s.heads, bw::ceil_div(s.seq, bw::kQBlock)).order == 0 &&
            it.tiles > last_tiles) {
          last_tiles = 1 << 30;  // a new group of heads
        }
        EXPECT_LE(it.tiles, last_tiles) << "causal items go longest first within a group";
        last_tiles = it.tiles;
      }
      const int query0 = it.q_block * bw::kQBlock, query_end = std::min(s.seq, query0 + bw::kQBlock);
      std::vector<int> visits(std::size_t(bw::kQBlock) * s.keys(), 0);  // (query - query0, key)
      for (int tile = 0; tile < it.tiles; ++tile)
        for (int query = query0; query < query_end; ++query)
          for (int key = tile * step; key < std::min(s.keys(), (tile + 1) * step); ++key)
            ++visits[std::size_t(query - query0) * s.keys() + key];
      for (int query = query0; query < query_end; ++query)
        for (int key = 0; key < s.keys(); ++key) {
          const int n = visits[std::size_t(query - query0) * s.keys() + key];
          if (s.mask.attends(query, key) && n != 1) FAIL() << "query " << query << " key " << key << ": " << n;
        }
      for (int row0 = query0; row0 < query0 + bw::kQBlock; row0 += 16)
        for (int tile = 0; tile < it.tiles; ++tile) {
          bool unattended = false;
          for (int query = row0; query < row0 + 16; ++query)
            for (int key = tile * step; key < (tile + 1) * step; ++key)
              unattended |= query < s.seq && !s.mask.attends(query, key);
          if (unattended) {
            EXPECT_TRUE(s.mask.needs_mask(row0, tile * step, step)) << "queries " << row0 << ".. key tile " << tile;
          }
        }
    }
    EXPECT_EQ(int(items.size()), s.batch * s.heads * bw::ceil_div(s.seq, bw::kQBlock));
  }
}

// With more queries than keys the causal mask leaves the first queries - keys queries no key: a
// dQ item holding only those takes no step (it stores dQ = 0, reading no K or V); one holding the
// first query with a key takes the tiles up to its last query's keys.
TEST(AttentionBackward, QueriesThatAttendNoKeyTakeNoStep) {
  const bw::Schedule s = schedule(1, 1, 1, 1000, 200, true);  // queries 0 .. 799 attend no key
  for (int t = 0; t < bw::q_items(s); ++t) {
    const bw::QItem it = bw::q_item(s, t);
    const int query_end = std::min(s.seq, (it.q_block + 1) * bw::kQBlock);
    EXPECT_EQ(it.tiles, query_end <= 800 ? 0 : bw::ceil_div(query_end - 800, bw::kQStepKeys)) << "block " << it.q_block;
  }
}

// Staggered items of one key/value matrix, which start together, reduce into different query
// tiles at every step (without a mask; with one they start at their own first tile), where there
// are no more keys than queries (with more the rotations wrap: kv_item).
TEST(AttentionBackward, StaggeredItemsReduceIntoDistinctTiles) {
  for (int d : {64, 128})
  for (const bw::Schedule& s : schedules()) {
    if (s.mask.causal || s.keys() > s.seq) continue;
    SCOPED_TRACE(describe(s) + " D " + std::to_string(d));
    for (int kvm = 0; kvm < s.batch * s.kv_heads; ++kvm) {
      std::vector<bw::KvItem> same_matrix;
      for (int t = 0; t < bw::kv_items(s); ++t) {
        const bw::KvItem it = bw::kv_item(s, t, bw::kv_step_queries(d), true);
        if (it.kvm == kvm) same_matrix.push_back(it);
      }
      for (int step = 0; step < same_matrix.front().steps; ++step) {
        std::set<std::pair<int, int>> tiles;
        for (const bw::KvItem& it : same_matrix) {
          EXPECT_TRUE(tiles.insert({it.qm(step), it.q_tile(step)}).second) << "step " << step << " block " << it.kv_block;
        }
      }
    }
  }
}

// Causal items come a group of whole heads at a time (kCausalGroupItems items), each head's
// items in order, longest first: at shapes with many groups, the last one short, every (matrix,
// order) once and within its group.
TEST(AttentionBackward, CausalItemsComeAGroupOfHeadsAtATime) {
  for (auto [matrices, per_matrix] : {std::pair{128, 16}, {39, 16}, {4, 128}, {512, 1}, {3, 300}, {1, 1}}) {
    SCOPED_TRACE(std::to_string(matrices) + " matrices of " + std::to_string(per_matrix) + " items");
    const int group_matrices = std::max(1, bw::kCausalGroupItems / per_matrix);
    std::set<std::pair<int, int>> seen;
    for (int t = 0; t < matrices * per_matrix; ++t) {
      const attention::WorkOrder c = bw::causal_order(t, matrices, per_matrix);
      ASSERT_LT(c.matrix, matrices);
      ASSERT_LT(c.order, per_matrix);
      EXPECT_TRUE(seen.insert({c.matrix, c.order}).second) << "item " << t << " repeats";
      EXPECT_EQ(c.matrix / group_matrices, t / (group_matrices * per_matrix)) << "item " << t << " outside its group";
      if (t > 0 && c.matrix / group_matrices == bw::causal_order(t - 1, matrices, per_matrix).matrix / group_matrices) {
        EXPECT_GE(c.order, bw::causal_order(t - 1, matrices, per_matrix).order) << "longest first within the group";
      }
    }
  }
}

// The dQ accumulator's part layout: each place holds one element of the 64 x kDqCols part, and a
// lane's register float4 k goes where the wgmma accumulator (rt_fl<16, kDqCols>, row layout:
// tk/layout/rt_layout.hpp) holds the element dq_element names, so what the dK/dV kernel stages is
// what the conversion reads.
TEST(AttentionBackward, DqPartLayoutIsTheAccumulatorsRegisters) {
  std::set<std::pair<int, int>> seen;
  for (int offset = 0; offset < bw::kDqPartFloats; ++offset) {
    const bw::DqElement e = bw::dq_element(offset);
    ASSERT_GE(e.row, 0);
    ASSERT_LT(e.row, bw::kDqTileQ);
    ASSERT_GE(e.col, 0);
    ASSERT_LT(e.col, bw::kDqCols);
    EXPECT_TRUE(seen.insert({e.row, e.col}).second) << "offset " << offset;
  }
  EXPECT_EQ(int(seen.size()), bw::kDqPartFloats);
  for (int warp = 0; warp < bw::kDqTileQ / bw::kDqWarpRows; ++warp)
    for (int lane = 0; lane < 32; ++lane)
      for (int f = 0; f < bw::kDqFloat4sPerLane * 4; ++f) {
        const tk::layout::Coord c = tk::layout::rt_element(lane, f, bw::kDqCols, tk::layout::RtLayout::row);
        const bw::DqElement e = bw::dq_element(bw::dq_fragment_offset(warp, f / 4, lane, f % 4));
        EXPECT_EQ(e.row, warp * bw::kDqWarpRows + c.row) << warp << " " << lane << " " << f;
        EXPECT_EQ(e.col, c.col) << warp << " " << lane << " " << f;
      }
  // A lane's 16-byte store of float4 k: consecutive lanes 16 bytes apart (no bank conflicts).
  EXPECT_EQ(bw::dq_fragment_offset(0, 0, 1, 0) - bw::dq_fragment_offset(0, 0, 0, 0), 4);
}

// Parts tile the accumulator: (query matrix, query tile, part) -> disjoint contiguous spans that
// cover it, each 16-byte aligned (a bulk reduction's rule); and so do the dK/dV steps' parts
// (dq_step_part_start), each step's inside its own queries.
TEST(AttentionBackward, DqPartsTileTheAccumulator) {
  for (int d : {64, 128})
    for (int seq : {1, 63, 64, 65, 128, 129, 1000}) {
      const int batch = 2, heads = 3, tiles = bw::padded(seq) / bw::kDqTileQ;
      const int step = bw::kv_step_queries(d), step_tiles = bw::padded(seq) / step;
      const std::size_t floats = bw::dq_accumulator_floats(batch, heads, seq, d);
      std::vector<int> covered(floats, 0), covered_by_steps(floats, 0);
      for (int qm = 0; qm < batch * heads; ++qm) {
        for (int tile = 0; tile < tiles; ++tile)
          for (int part = 0; part < bw::dq_parts(d); ++part) {
            const std::size_t start = bw::dq_part_start(qm, tile, part, seq, d);
            ASSERT_LE(start + bw::kDqPartFloats, covered.size());
            EXPECT_EQ(start % 4, 0u);
            for (int i = 0; i < bw::kDqPartFloats; ++i) ++covered[start + i];
          }
        for (int tile = 0; tile < step_tiles; ++tile)
          for (int part = 0; part < bw::dq_step_parts(d); ++part) {
            const std::size_t start = bw::dq_step_part_start(qm, tile, part, seq, d);
            const std::size_t step_start = bw::dq_part_start(qm, tile * step / bw::kDqTileQ, 0, seq, d);
            EXPECT_GE(start, step_start);
            EXPECT_LE(start + bw::kDqPartFloats, step_start + std::size_t(step) * d) << "inside the step's queries";
            for (int i = 0; i < bw::kDqPartFloats; ++i) ++covered_by_steps[start + i];
          }
      }
      EXPECT_TRUE(std::all_of(covered.begin(), covered.end(), [](int c) { return c == 1; })) << d << " " << seq;
      EXPECT_EQ(covered_by_steps, covered) << d << " " << seq;
    }
}

TEST(AttentionBackward, ReducingScratchHoldsTheAccumulator) {
  const Shape s{2, 8, 2, 1000, 128, true};
  const std::size_t rows = 2 * 8 * 1024;
  EXPECT_EQ(attention::backward_scratch_bytes(s, {.dq = DqPath::deterministic}), 2 * rows * sizeof(float));
  EXPECT_EQ(attention::backward_scratch_bytes(s, {.dq = DqPath::reducing}), (2 + 128) * rows * sizeof(float));
  // The default resolves per shape (below): the reducing path.
  EXPECT_EQ(attention::backward_scratch_bytes(s), (2 + 128) * rows * sizeof(float));
}

// `fastest` takes the reducing path where the H200 measured it faster (attention::dq_path): every
// shape measured; an explicit path is kept whatever the shape.
TEST(AttentionBackward, FastestDqPathFollowsTheMeasurements) {
  for (int seq : {1, 1024, 2048, 16384})
    for (int head_dim : {64, 128})
      for (bool causal : {false, true}) {
        EXPECT_EQ(attention::dq_path({1, 16, 16, seq, head_dim, causal}, {}), DqPath::reducing)
            << seq << " " << head_dim << " " << causal;
      }
  const Shape s{1, 16, 16, 16384, 128, false};
  EXPECT_EQ(attention::dq_path(s, {.dq = DqPath::deterministic}), DqPath::deterministic);
  EXPECT_EQ(attention::dq_path({1, 16, 16, 1, 64, false}, {.dq = DqPath::reducing}), DqPath::reducing);
}
