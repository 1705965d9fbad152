#pragma once
// How the portable attention forward (attention_portable.cu) cuts the work, as constexpr math
// that the host tests check for every edge (tests/host/test_attention_tiles.cpp): a block of
// kWarps warps takes kBlockRows queries of one (batch, head), each warp kRowsPerWarp of them (one
// mma.sync M), and walks the keys kKeys at a time. Causal blocks walk keys only up to their last
// query, so with kKeys == kBlockRows only their last key tile crosses the diagonal.
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

// Key tiles a block starting at query `q0` walks.
constexpr int key_tiles(int q0, int seq, bool causal) {
  const int keys = causal && q0 + kBlockRows < seq ? q0 + kBlockRows : seq;
  return ceil_div(keys, kKeys);
}

// Whether `query` attends `key`: the key exists, and is not in the future when causal.
constexpr bool attends(int query, int key, int seq, bool causal) { return key < seq && !(causal && key > query); }

// Whether the key tile from `key0` holds a key that some query from `warp_q0` (a warp's
// kRowsPerWarp queries) does not attend, so the warp must mask its scores.
constexpr bool needs_mask(int key0, int warp_q0, int seq, bool causal) {
  const int last_key = key0 + kKeys - 1;
  return last_key >= seq || (causal && last_key > warp_q0);
}

}  // namespace attention::portable
