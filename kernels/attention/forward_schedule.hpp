#pragma once
// The order in which the Hopper attention forward's persistent grid takes its causal work items
// (hopper/config.cuh's item()), as constexpr math that the host tests check
// (tests/host/test_attention_forward_schedule.cpp) and the kernel calls.
//
// Block b of a grid of G takes items b, b + G, b + 2G, ... (no counter: a dynamic scheduler's
// handshakes cost the non-causal shapes 6-8%, results/NOTES.md, eighth session). With a causal
// mask an item's length (key tiles) grows with its query block, so the order decides both the
// balance between blocks and what the blocks in flight read. Longest first across every head
// balanced them, but a wave of G items then read G heads' K and V (at B = 16, H = 16, N = 1024,
// D = 128: 132 heads x 512 KB against a 60 MB L2), each head's items two waves apart, so every
// item re-read its K and V from DRAM (ncu: 79% DRAM throughput, the tensor pipe 54%).
//
// Chunked, items come a chunk of whole heads at a time, about two waves (2G items), and within
// a chunk longest first, the second wave reversed: a block takes the chunk's i-th longest item
// and then its i-th shortest, so every pair sums to the same length (exactly, when the chunk's
// heads fill two waves) and the grid moves through the chunks together, reading a chunk's heads
// (33 at N = 1024 D = 128, 17 MB) from DRAM once. Measured in turns against longest first
// (results/NOTES.md, seventeenth session): D = 128 causal +8.6%, +3.8%, +1.7% at N = 1024, 4096,
// 16384; D = 64 -3.5%, -2.1%, +1.8%, so a config chooses (Config::causal_chunks).
#include <algorithm>

namespace attention::forward {

struct CausalOrder {
  int matrix, order;  // order 0: the matrix's longest item (its last query block)
};

// Item t of `matrices` x `q_blocks`, longest first across every head.
constexpr CausalOrder longest_first(int t, int matrices) { return {t % matrices, t / matrices}; }

// Item t of `matrices` x `q_blocks` for a grid of `grid` blocks, a chunk of heads at a time.
constexpr CausalOrder chunked(int t, int grid, int matrices, int q_blocks) {
  const int chunk_matrices = std::max(1, 2 * grid / q_blocks), chunk_items = chunk_matrices * q_blocks;
  const int chunk = t / chunk_items, position = t % chunk_items;
  const int first = chunk * chunk_matrices, here = std::min(chunk_matrices, matrices - first);  // the last chunk may be short
  // Position p of the chunk is lane p % grid of wave p / grid (the same block at the same lane
  // of every wave); odd waves take the chunk's ranks backwards.
  const int wave_start = position / grid * grid, wave_items = std::min(grid, here * q_blocks - wave_start);
  const bool backwards = position / grid % 2 == 1;
  const int rank = backwards ? wave_start + wave_items - 1 - (position - wave_start) : position;
  return {first + rank % here, rank / here};
}

}  // namespace attention::forward
