#pragma once
// The orders in which the attention kernels' persistent grids take their work items (a block of
// rows of one matrix, a (batch, head) pair), as constexpr math that the host tests check
// (tests/host/test_attention_work_order.cpp) and the kernels call: the forward through
// hopper/config.cuh's item(), the backward through backward_schedule.hpp's kv_item and q_item.
//
// Block b of a grid of G takes items b, b + G, b + 2G, ... (no counter: a dynamic scheduler's
// handshakes cost the non-causal forward; docs/decisions/013-persistent-static-grid.md). Without a mask
// every item of a matrix is as long as the next, and items run head by head, so the blocks in
// flight share one head's tensors in L2. With a causal mask an item's length grows with its place
// in the matrix, so the order decides both the balance between blocks and what the blocks in
// flight read. Longest first across every head (snaked) balances them, but where there are as
// many heads as blocks a wave of G items reads G heads' tensors (at B = 16, H = 16, N = 1024,
// D = 128: 132 heads x 512 KB of K and V against a 60 MB L2), each head's items waves apart, so
// every item re-reads them from DRAM (ncu: 79% DRAM throughput, the tensor pipe 54%). grouped and
// chunked take a few heads at a time.
#include <algorithm>

namespace attention {

struct WorkOrder {
  int matrix, order;  // order 0: the matrix's first item (with a causal mask, its longest)
};

// A causal grid's blocks of `block_rows` rows end at the sequence's end: the first starts this
// many tiles of `tile_rows` before row 0, so that the padding of an N not a multiple of
// block_rows falls in each head's shortest item (hopper/config.cuh's forward_problem).
constexpr int padding_tiles(int seq, int block_rows, int tile_rows) {
  const int blocks = (seq + block_rows - 1) / block_rows;
  return (blocks * block_rows - seq) / tile_rows;
}

// Item t of `matrices` x `per_matrix`, head by head.
constexpr WorkOrder head_by_head(int t, int per_matrix) { return {t / per_matrix, t % per_matrix}; }

// Rank of position p of `items` taken in turn by a grid of G blocks (block p % G, wave p / G):
// odd waves take the ranks backwards, so a block's longest item of one wave comes with its
// shortest of the next, and the waves' sums come out even.
constexpr int snake_rank(int p, int grid, int items) {
  const int wave_start = p / grid * grid, wave_items = std::min(grid, items - wave_start);
  return p / grid % 2 == 1 ? wave_start + wave_items - 1 - (p - wave_start) : p;
}

// Item t of `matrices` x `per_matrix`, longest first across every head, snaking (snake_rank):
// the forward's causal order but where hopper/config.cuh's causal_chunks picks chunked
// (docs/decisions/017-forward-causal-order.md).
constexpr WorkOrder snaked(int t, int grid, int matrices, int per_matrix) {
  const int rank = snake_rank(t, grid, matrices * per_matrix);
  return {rank % matrices, rank / matrices};
}

// Item t, a group of about `group_items` items of whole heads at a time, longest first within the
// group: the backward's causal order (backward_schedule.hpp says why its group is 256 items).
constexpr WorkOrder grouped(int t, int matrices, int per_matrix, int group_items) {
  const int group_matrices = std::max(1, group_items / per_matrix), items = group_matrices * per_matrix;
  const int first = t / items * group_matrices, in_group = t % items;
  const int here = std::min(group_matrices, matrices - first);  // the last group may be short
  return {first + in_group % here, in_group / here};
}

// Item t for a grid of `grid` blocks, a chunk of whole heads at a time, about two waves (2G
// items), and within a chunk longest first, the second wave reversed: a block takes the chunk's
// i-th longest item and then its i-th shortest, so every pair sums to the same length (exactly,
// when the chunk's heads fill two waves) and the grid moves through the chunks together, reading
// a chunk's heads (33 at N = 1024 D = 128, 17 MB) from DRAM once: the forward's causal order
// where hopper/config.cuh's causal_chunks says (docs/decisions/017-forward-causal-order.md).
constexpr WorkOrder chunked(int t, int grid, int matrices, int per_matrix) {
  const int chunk_matrices = std::max(1, 2 * grid / per_matrix), chunk_items = chunk_matrices * per_matrix;
  const int chunk = t / chunk_items, position = t % chunk_items;
  const int first = chunk * chunk_matrices, here = std::min(chunk_matrices, matrices - first);  // the last chunk may be short
  // Position p of the chunk is lane p % grid of the chunk's wave p / grid, snaking (snake_rank).
  const int rank = snake_rank(position, grid, here * per_matrix);
  return {first + rank % here, rank / here};
}

}  // namespace attention
