#pragma once
// How the Hopper attention backward (hopper/backward_*.cuh) cuts the work, as constexpr math
// that the host tests check (tests/host/test_attention_backward.cpp) and the kernels call.
//
// dK, dV: a work item per (batch, key/value head, kKvBlock keys) walks, for each query head of
// its group, the query tiles of kKvStepQ rows that see its keys. dQ: a work item per (batch,
// query head, kQBlock queries) walks the key tiles of kQStepKv keys its queries see.
#include <cstddef>

namespace attention::backward {

inline constexpr int kKvBlock = 128;  // keys per dK/dV item: two consumer warpgroups of 64
inline constexpr int kKvStepQ = 64;   // queries per dK/dV step
inline constexpr int kQBlock = 128;   // queries per dQ item: two consumer warpgroups of 64
inline constexpr int kQStepKv = 64;   // keys per dQ step

// The scratch's per-row vectors (D and LSE in base 2) are padded to a multiple of kRowPad rows,
// so every query tile either kernel reads lies inside them: the bulk copies that read them have
// no edge to stop at. Pad rows hold LSE = +inf (P = 2^(s - inf) = 0) and D = 0.
inline constexpr int kRowPad = 128;
static_assert(kRowPad % kKvStepQ == 0 && kRowPad % kQBlock == 0, "query tiles lie inside the padded scratch");
static_assert(kKvBlock % kKvStepQ == 0, "a causal dK/dV item's first query tile starts at its first key");

constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
constexpr int padded(int seq) { return ceil_div(seq, kRowPad) * kRowPad; }

// The scratch's floats: two vectors of [batch][heads][padded(seq)].
constexpr std::size_t scratch_floats(int batch, int heads, int seq) {
  return 2 * std::size_t(batch) * heads * padded(seq);
}

// Whether `query` attends `key`: the key exists, and is not in the future when causal.
constexpr bool attends(int query, int key, int seq, bool causal) { return key < seq && !(causal && key > query); }

struct Schedule {
  int batch, heads, kv_heads, seq;
  bool causal;
  constexpr int group() const { return heads / kv_heads; }
};

// A dK/dV work item: key block `kv_block` of key/value matrix `kvm` (batch x kv_heads + head).
// Step s reads query matrix qm(s) (batch x heads + head), query tile q_tile(s): for each of the
// group's query heads in turn, tiles first_q .. (with a causal mask the tiles before the block's
// first key see none of its keys).
struct KvItem {
  int kv_block, kvm, first_qm, first_q, per_head, steps;
  constexpr int qm(int step) const { return first_qm + step / per_head; }
  constexpr int q_tile(int step) const { return first_q + step % per_head; }
};

constexpr int kv_items(const Schedule& s) { return ceil_div(s.seq, kKvBlock) * s.batch * s.kv_heads; }

// Item t. Without a mask items run head by head, so the blocks in flight share one head's Q and
// dO in L2; with one, the longest items (the first keys, which every later query sees) of every
// head come first and the shortest last, so the grid finishes together.
constexpr KvItem kv_item(const Schedule& s, int t) {
  const int kv_blocks = ceil_div(s.seq, kKvBlock), matrices = s.batch * s.kv_heads;
  const int kvm = s.causal ? t % matrices : t / kv_blocks;
  const int kv_block = s.causal ? t / matrices : t % kv_blocks;
  const int batch = kvm / s.kv_heads, kvh = kvm % s.kv_heads;
  const int first_q = s.causal ? kv_block * kKvBlock / kKvStepQ : 0;
  const int per_head = ceil_div(s.seq, kKvStepQ) - first_q;
  return {kv_block, kvm, batch * s.heads + kvh * s.group(), first_q, per_head, per_head * s.group()};
}

// A dQ work item: query block `q_block` of query matrix `qm`, reading key/value matrix `kvm`, key
// tiles 0 .. tiles - 1 (with a causal mask those up to the block's last query).
struct QItem {
  int q_block, qm, kvm, tiles;
};

constexpr int q_items(const Schedule& s) { return ceil_div(s.seq, kQBlock) * s.batch * s.heads; }

// Item t: as the forward's, head by head without a mask, longest (last queries) first with one.
constexpr QItem q_item(const Schedule& s, int t) {
  const int q_blocks = ceil_div(s.seq, kQBlock), matrices = s.batch * s.heads;
  const int qm = s.causal ? t % matrices : t / q_blocks;
  const int order = s.causal ? t / matrices : t % q_blocks;
  const int q_block = s.causal ? q_blocks - 1 - order : order;
  const int kvm = qm / s.heads * s.kv_heads + qm % s.heads / s.group();
  const int end = (q_block + 1) * kQBlock;
  const int last_key = s.causal && end < s.seq ? end : s.seq;
  return {q_block, qm, kvm, ceil_div(last_key, kQStepKv)};
}

// Whether a tile of `keys` keys from key0 against queries from query0 on holds a pair that is
// not attended (a key past the sequence, or with a causal mask one after the first query), so
// its scores must be masked.
constexpr bool needs_mask(int query0, int key0, int keys, int seq, bool causal) {
  return key0 + keys > seq || (causal && key0 + keys - 1 > query0);
}

}  // namespace attention::backward
