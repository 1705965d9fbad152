#pragma once
// How the Hopper attention backward (hopper/backward_*.cuh) cuts the work, as constexpr math
// that the host tests check (tests/host/test_attention_backward.cpp) and the kernels call.
//
// dK, dV: a work item per (batch, key/value head, kKvBlock keys) walks, for each query head of
// its group, the query tiles (kv_step_queries rows) that see its keys. dQ: a work item per (batch,
// query head, kQBlock queries) walks the key tiles (kQStepKeys keys) its queries see; or, on the
// reducing path (DqPath::reducing), the dK/dV items add each step's share of
// dQ into an fp32 accumulator laid out as below, and a conversion writes it out. Which keys a
// query sees is the Mask's rule (mask.hpp), with as many keys as queries or not.
#include <cstddef>

#include "kernels/attention/mask.hpp"
#include "kernels/attention/work_order.hpp"

namespace attention::backward {

inline constexpr int kKvBlock = 128;  // keys per dK/dV item: two consumer warpgroups of 64
inline constexpr int kDqTileQ = 64;   // queries per tile of the reducing path's dQ accumulator (below)
inline constexpr int kQBlock = 128;   // queries per dQ item: two consumer warpgroups of 64

// Queries per dK/dV step and keys per dQ step. A step's element-wise work (the exponentials, dS)
// is the same at D = 64 and 128 but its products are half as long at D = 64, so steps of 64 leave
// the tensor cores waiting on it: steps of 128 (FlashAttention-3's D = 64 tile) are half as many,
// each wgmma at N = 128. A dQ step of 128 keys fits at either D (its scores beside dQ's D / 2
// registers); it measured 2-5% faster than 64 at D = 128. A dK/dV step of 128 queries does only
// at D = 64: at D = 128 its scores would not fit beside dK and dV in a thread's registers. Both
// dQ paths take the same steps (a reducing step's share of dQ is one or two accumulator tiles).
constexpr int kv_step_queries(int head_dim) { return head_dim == 64 ? 128 : 64; }
inline constexpr int kQStepKeys = 128;

// The scratch's per-row vectors (D and LSE in base 2) are padded to a multiple of kRowPad rows,
// so every query tile either kernel reads lies inside them: the bulk copies that read them have
// no edge to stop at. Pad rows hold LSE = +inf (P = 2^(s - inf) = 0) and D = 0.
inline constexpr int kRowPad = 128;
static_assert(kRowPad % kv_step_queries(64) == 0 && kRowPad % kv_step_queries(128) == 0 && kRowPad % kQBlock == 0,
              "query tiles lie inside the padded scratch");
static_assert(kKvBlock % kv_step_queries(64) == 0 && kKvBlock % kv_step_queries(128) == 0,
              "a key block spans whole query tiles (the staggered items' rotation)");

constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
constexpr int padded(int seq) { return ceil_div(seq, kRowPad) * kRowPad; }

// The scratch's floats: two vectors of [batch][heads][padded(seq)], seq the queries.
constexpr std::size_t scratch_floats(int batch, int heads, int seq) {
  return 2 * std::size_t(batch) * heads * padded(seq);
}

// A row of the scratch's vectors where the tensors hold it: row `row` of query matrix `matrix`,
// and how many rows from it on are queries, counted to the end of its block of kRowPad at least
// (<= 0: a pad row, which no tensor holds).
struct QueryRow {
  int matrix, row, queries_left;
  constexpr bool real() const { return queries_left > 0; }
};
// Scratch row g of a dense batch of `seq` queries.
constexpr QueryRow dense_query_row(int seq, std::size_t g) {
  const int r = int(g % padded(seq));
  return {int(g / padded(seq)), r, seq - r};
}

// seq: queries per sequence; mask: the keys per sequence (mask.keys) and which each query attends.
struct Schedule {
  int batch, heads, kv_heads, seq;
  Mask mask;
  constexpr int group() const { return heads / kv_heads; }
  constexpr int keys() const { return mask.keys; }
};

// A dK/dV work item: key block `kv_block` of key/value matrix `kvm` (batch x kv_heads + head).
// Step s reads query matrix qm(s) (batch x heads + head), query tile q_tile(s) of `step` queries
// (kv_step_queries): for each of the group's query heads in turn, tiles first_q .. to the queries'
// end (with a causal mask the tiles before the one holding the first query that attends the
// block's first key see none of its keys).
//
// Staggered (the reducing path, without a mask): each head's tiles are walked from tile `rotate`
// on, wrapping, with rotate = kv_block x (kKvBlock / step), so the items in flight, which
// start together, reduce their dQ into different query tiles instead of all into tile 0 (the L2
// reduces ~3.1 TB/s into distinct tiles, ~1.3 TB/s into one: probes/tma-reduce). With a mask the
// items start at their own first tile already. With more keys than queries the rotations wrap,
// and items whose rotations meet share tiles.
struct KvItem {
  int kv_block, kvm, first_qm, first_q, per_head, steps, rotate = 0;
  constexpr int qm(int step) const { return first_qm + step / per_head; }
  constexpr int q_tile(int step) const { return first_q + (step + rotate) % per_head; }
};

constexpr int kv_items(const Schedule& s) { return ceil_div(s.keys(), kKvBlock) * s.batch * s.kv_heads; }

// With a causal mask, items run a group of matrices (heads) at a time, kCausalGroupItems items
// (about two waves of blocks), longest first within the group, so the grid still finishes
// together. With every head's longest items first, as before, the ~132 blocks in flight read as
// many heads' tensors and, on the reducing path, reduce into as many heads' dQ accumulators
// (B H N D x 4 bytes: 128 MB at B = 8, H = 16, N = 2048, D = 128) against a 60 MB L2: ncu had the
// reducing kernel at 75% DRAM throughput and 38% compute there, the deterministic one at 65% DRAM
// (docs/decisions/022-backward-causal-head-groups.md). A group's tensors are 256 x 128 rows of each, 16 MB of
// accumulator at D = 128. The blocks take items in launch order (one item a block), so grouping
// costs no balance but at the group's end.
constexpr int kCausalGroupItems = 256;

constexpr WorkOrder causal_order(int t, int matrices, int per_matrix) {
  return grouped(t, matrices, per_matrix, kCausalGroupItems);
}

// Item t. Without a mask items run head by head, so the blocks in flight share one head's Q and
// dO in L2; with one, the longest items (the first keys, which every later query sees) first
// within each group of heads (above).
constexpr KvItem kv_item(const Schedule& s, int t, int step, bool staggered = false) {
  const int kv_blocks = ceil_div(s.keys(), kKvBlock), matrices = s.batch * s.kv_heads;
  const WorkOrder c = s.mask.causal ? causal_order(t, matrices, kv_blocks) : head_by_head(t, kv_blocks);
  const int kvm = c.matrix, kv_block = c.order;
  const int batch = kvm / s.kv_heads, kvh = kvm % s.kv_heads;
  // Every key is attended by the last query at least (mask.hpp), so every item has a tile.
  const int first_q = s.mask.first_query(kv_block * kKvBlock) / step;
  const int per_head = ceil_div(s.seq, step) - first_q;
  const int rotate = staggered && !s.mask.causal ? kv_block * (kKvBlock / step) % per_head : 0;
  return {kv_block, kvm, batch * s.heads + kvh * s.group(), first_q, per_head, per_head * s.group(), rotate};
}

// A dQ work item: query block `q_block` of query matrix `qm`, reading key/value matrix `kvm`, key
// tiles of kQStepKeys keys 0 .. tiles - 1: those holding a key the block's queries attend. None
// where they attend no key (a causal mask, more queries than keys): the item stores dQ = 0.
struct QItem {
  int q_block, qm, kvm, tiles;
};

constexpr int q_items(const Schedule& s) { return ceil_div(s.seq, kQBlock) * s.batch * s.heads; }

// Item t: head by head without a mask, with one the longest (last queries) first within each
// group of heads, as the dK/dV items.
constexpr QItem q_item(const Schedule& s, int t) {
  const int q_blocks = ceil_div(s.seq, kQBlock), matrices = s.batch * s.heads;
  const WorkOrder c = s.mask.causal ? causal_order(t, matrices, q_blocks) : head_by_head(t, q_blocks);
  const int qm = c.matrix, order = c.order;
  const int q_block = s.mask.causal ? q_blocks - 1 - order : order;
  const int kvm = qm / s.heads * s.kv_heads + qm % s.heads / s.group();
  return {q_block, qm, kvm, ceil_div(s.mask.key_end((q_block + 1) * kQBlock), kQStepKeys)};
}

// ---- the reducing path's dQ accumulator ----
//
// Each dK/dV step holds dS^T for its 128 keys x kv_step_queries queries; its share of dQ, dS K,
// is computed in parts of kDqTileQ queries (one wgmma's M) x kDqCols columns (one 128-byte
// swizzle box of bf16 rows, so a part's A operand is one box of dS^T and its B operand one box
// of K) and reduced into the accumulator a part at a time by one bulk reduction
// (cp.reduce.async.bulk, tk::arch::bulk_reduce_add_f32). A step has two parts at either D: its
// two query tiles at D = 64, a tile's two column boxes at D = 128. The accumulator is
// [batch x heads][padded(seq) / kDqTileQ query tiles][D / kDqCols parts][kDqPartFloats], each part
// in the order the consumer warps hold it in registers (the wgmma accumulator: tk/layout/
// rt_layout.hpp), so that staging a part in shared memory is conflict-free 16-byte stores and the
// part is one contiguous span: warp w (query rows 16w..16w+15) owns kDqPartFloats / 4 floats, in
// float4s ordered (its register float4 k, then lane). dq_part_offset maps a part's element (row,
// col) there; the conversion kernel walks it the other way.
inline constexpr int kDqCols = 64;
inline constexpr int kDqPartFloats = kDqTileQ * kDqCols;
inline constexpr int kDqWarpRows = 16;                        // a warp's rows of the wgmma accumulator
inline constexpr int kDqFloat4sPerLane = kDqCols * kDqWarpRows / 32 / 4;  // 8: a warp's 16 x 64 floats

constexpr int dq_parts(int head_dim) { return head_dim / kDqCols; }  // a tile's parts
constexpr int dq_step_tiles(int head_dim) { return kv_step_queries(head_dim) / kDqTileQ; }
constexpr int dq_step_parts(int head_dim) { return dq_step_tiles(head_dim) * dq_parts(head_dim); }
constexpr std::size_t dq_accumulator_floats(int batch, int heads, int seq, int head_dim) {
  return std::size_t(batch) * heads * padded(seq) * head_dim;
}
// Part `part` of query tile `q_tile` (kDqTileQ queries) of query matrix `qm`: its first float.
constexpr std::size_t dq_part_start(int qm, int q_tile, int part, int seq, int head_dim) {
  return (std::size_t(qm) * (padded(seq) / kDqTileQ) + q_tile) * kDqTileQ * head_dim + std::size_t(part) * kDqPartFloats;
}
// Part `part` (0 .. dq_step_parts - 1, query tile first) of the dK/dV step over query tile
// `step_tile` (kv_step_queries queries): the query tile part / dq_parts, the columns part % dq_parts.
// Its A operand is box part / dq_parts of the step's dS^T, its B operand box part % dq_parts of K.
constexpr std::size_t dq_step_part_start(int qm, int step_tile, int part, int seq, int head_dim) {
  const int tile = step_tile * dq_step_tiles(head_dim) + part / dq_parts(head_dim);
  return dq_part_start(qm, tile, part % dq_parts(head_dim), seq, head_dim);
}

// Where lane `lane` of warp `warp` keeps float f (0..3) of its register float4 k: four floats of
// the wgmma accumulator's 16 x kDqCols slice, registers 4k..4k+3 (rows g and g + 8, g = lane / 4,
// columns 16 (k / 2) + 8 (k % 2) + 2 (lane % 4) + 0, 1: tk/layout/rt_layout.hpp's row_l pairs).
constexpr int dq_fragment_offset(int warp, int k, int lane, int f) {
  return ((warp * kDqFloat4sPerLane + k) * 32 + lane) * 4 + f;
}
struct DqElement {
  int row, col;
};
// The part's element at that place (the inverse: the conversion kernel's reading).
constexpr DqElement dq_element(int offset) {
  const int f = offset % 4, lane = offset / 4 % 32, k = offset / 128 % kDqFloat4sPerLane;
  const int warp = offset / (128 * kDqFloat4sPerLane);
  return {warp * kDqWarpRows + lane / 4 + 8 * (f / 2), 16 * (k / 2) + 8 * (k % 2) + 2 * (lane % 4) + f % 2};
}

}  // namespace attention::backward
