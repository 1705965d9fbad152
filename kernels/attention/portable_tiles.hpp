#pragma once
// How the portable attention forward (attention_portable.cu) cuts the work, as constexpr math
// that the host tests check for every edge (tests/host/test_attention_tiles.cpp): a block of
// kWarps warps takes kBlockRows queries of one (batch, head), each warp kRowsPerWarp of them (one
// mma.sync M), and walks the keys kKeys at a time. Which keys a query attends is mask.hpp's rule;
// causal blocks walk keys only up to the last one their queries attend.
#include "kernels/attention/mask.hpp"

namespace attention::portable {

inline constexpr int kWarps = 4;
inline constexpr int kRowsPerWarp = 16;
inline constexpr int kBlockRows = kWarps * kRowsPerWarp;
inline constexpr int kKeys = 64;

constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

constexpr int query_tiles(int seq) { return ceil_div(seq, kBlockRows); }

// The query tile of block `block` of `tiles`: causal tiles do more work the later they sit, so
// the grid runs them last to first, and the short ones fill in behind the long ones.
constexpr int query_tile(int block, int tiles, bool causal) { return causal ? tiles - 1 - block : block; }

// Key tiles a block starting at query `q0` walks: up to the last key its queries attend, and at
// least one, so that queries attending no key still end with a finite softmax (masked below).
constexpr int key_tiles(int q0, Mask mask) {
  const int keys = mask.key_end(q0 + kBlockRows);
  return keys > 0 ? ceil_div(keys, kKeys) : 1;
}

}  // namespace attention::portable
