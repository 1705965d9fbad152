#pragma once
// The Hopper attention backward's types, shared memory and problem (the kernels are in
// backward_preprocess.cuh, backward_dkdv.cuh, backward_dq.cuh, backward_deterministic.cuh and
// backward_dq_convert.cuh, the work split in ../backward_schedule.hpp, the launcher in
// ../attention_hopper_backward.cu).
//
// Deterministic (DqPath::deterministic, on request; the default takes the reducing path,
// attention::dq_path): two launches, no atomics (the same inputs give the same bits):
//   1. preprocess: per query row, D = rowsum(dO * O) and LSE in base 2, into a padded scratch;
//   2. one launch of two kinds of work item (backward_deterministic.cuh):
//      dK, dV: an item per (batch, key/value head, 128 keys) walks the query tiles of every
//      query head of its group, recomputing P^T = 2^(S^T scale log2 e - lse2) and
//      dS^T = P^T * (dP^T - D), and accumulates dV += P^T dO and dK += dS^T Q in registers;
//      dQ: an item per (batch, query head, 128 queries) walks the key tiles, recomputing P and
//      dS the same way, and accumulates dQ += dS K in registers.
// The dQ items recompute S and dP (two of the five products the dK/dV items issue): the price of
// a dQ that needs neither fp32 atomics nor a reduction over key tiles.
//
// Reducing (DqPath::reducing, the default's): the five products FlashAttention-3 issues.
//   1. preprocess, as above, and it zeroes an fp32 dQ accumulator (../backward_schedule.hpp);
//   2. dK, dV as above, and each step also forms its share of dQ = dS K from dS^T staged in shared
//      memory, reducing it into the accumulator with the TMA's bulk reduction (atomic per element,
//      in no fixed order across key blocks: dQ's bits may differ from run to run; dK and dV not);
//   3. convert: dQ = scale x the accumulator, in bf16, at dQ's strides.
#include <cstdint>
#include <type_traits>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/backward_schedule.hpp"
#include "kernels/attention/hopper/tensor_maps.cuh"
#include "kernels/attention/varlen_backward.hpp"
#include "tk/warpgroup.cuh"

namespace attention::hopper::backward {

using namespace tk;
using namespace attention::backward;
using bf16 = __nv_bfloat16;

// ---- preprocess ----
constexpr int kPrepThreads = 256;
constexpr int kPrepColumnsPerLane = 8;  // one 16-byte load of bf16
template <int D>
constexpr int kPrepLanes = D / kPrepColumnsPerLane;  // lanes per row
template <int D>
constexpr int kPrepRowsPerBlock = kPrepThreads / kPrepLanes<D>;
static_assert(kRowPad % kPrepRowsPerBlock<64> == 0 && kRowPad % kPrepRowsPerBlock<128> == 0,
              "a block's rows lie in one padded row range");
constexpr int kPrepMaxBlocks = 1 << 16;  // the grid strides beyond

// Both kernels' consumers take turns to issue a step's first two products (S^T and dP^T, or S
// and dP), as the forward's do (config.cuh): one's products run under the other's exponentials
// instead of the two queueing at the tensor cores together and then exponentiating together
// (docs/decisions/014-consumer-turns.md). Every consumer of a block takes one turn per step, so
// the turns stay paired.

// Which warpgroup of the block. At D = 128 the DSL's warp-uniform index, whose tile addresses and
// descriptors live in uniform registers; at D = 64 the per-thread index, against which the uniform
// one measured slower (docs/decisions/010-wgmma-descriptor-advance.md).
template <int D>
__device__ __forceinline__ int block_warpgroup() {
  if constexpr (D == 128) return warpgroup::index();
  return warpgroup::index_per_thread();
}

// ---- dK, dV ----
// Two consumer warpgroups of 64 keys each (their K and V slices are the A operands of
// S^T = K Q^T and dP^T = V dO^T). A consumer thread holds dK and dV (D floats between them)
// beside S^T and dP^T (32 each): 240 registers, as the forward's D = 128 consumers take, leaving
// the producer 24. FusedDq: the reducing path's kernel, which also computes dQ's parts (below).
template <int D, bool FusedDq = false>
struct KvConfig {
  static constexpr int consumers = kKvBlock / warpgroup::kRows;
  static constexpr int consumer_registers = 240, producer_registers = 24;
  static constexpr int consumer_threads = consumers * 128;
  static constexpr int threads = 128 + consumer_threads;  // the producer warpgroup, then the consumers
  static constexpr int step = kv_step_queries(D);  // queries per step
  // A step's Q and dO are 2 x 16 KB at D = 128 and at D = 64 (128 queries): three stages beside
  // the item's K and V (64 KB at D = 128) take 163 KB, four at D = 64 160 KB. With FusedDq two
  // (FlashAttention-3's count), for the dS^T and dQ staging below (64 KB at D = 128, 96 KB at 64).
  static constexpr int stages = FusedDq ? 2 : D == 64 ? 4 : 3;

  using kv = st<bf16, warpgroup::kRows, D>;  // a consumer's keys or values, then its dK or dV on the way out
  using q = st<bf16, step, D>;               // a step's queries or dO
  using vec = sv<float, step>;               // a step's lse2 or D
  using scores = rt_fl<16, step>;            // a warp's 16 keys x the step's queries: S^T, P^T, dP^T, dS^T
  using probs = rt_bf<16, step>;             // P^T or dS^T as the A operand of dV += P^T dO, dK += dS^T Q
  using grad = rt_fl<16, D>;                 // a warp's 16 rows of dK or dV
  using grad_bf = rt_bf<16, D>;
  // S^T's columns are queries, so lse2 and D are column vectors, applied a 16-column slice at a
  // time: the whole quad_vl vector of 64 would hold 16 registers per thread.
  static constexpr int slice = 16;
  using slice_tile = rt_fl<16, slice>;
  using slice_vec = slice_tile::col_vec;

  // ---- FusedDq: dQ's parts (../backward_schedule.hpp) ----
  // dS^T of a consumer's 64 keys x the step's queries, in bf16: the A operands (MN-major: A^T is
  // stored) of the step's parts dQ_part = dS K, which read every consumer's tile, one query box
  // each. Two per consumer, by step parity: a consumer rewrites one only after the barrier of the
  // step after, which every reader of the tile's last contents passes only once its products are
  // done.
  using ds_tile = st<bf16, warpgroup::kRows, step>;
  static constexpr int ds_ring = 2;
  using ds_box = st<bf16, warpgroup::kRows, kDqTileQ>;  // one part's queries of a consumer's dS^T
  using key_box = st<bf16, warpgroup::kRows, kDqCols>;  // one part's columns of a consumer's keys
  static_assert(ds_tile::box_cols == kDqTileQ && ds_tile::swizzle == ds_box::swizzle, "a part's A operand is one box of dS^T");
  static_assert(kv::box_cols == kDqCols && kv::swizzle == key_box::swizzle, "a part's B operand is one box of K");
  static_assert(kDqTileQ == warpgroup::kRows, "a part's queries are one wgmma's M");
  static_assert(dq_step_parts(D) == consumers, "consumer w takes part w of every step");
  using dq_part = rt_fl<16, kDqCols>;  // a warp's 16 queries x one part's columns: 32 floats, transient
  // A part staged for its bulk reduction, in the accumulator's order, one tile per consumer: the
  // producer warpgroup's second warp (the writer, FlashAttention-3's dQ writer) hands each staged
  // part to the TMA and frees the tile once the copy engine has read it.
  static constexpr int writer_warp = 1;
  static constexpr std::uint32_t dq_part_bytes = kDqPartFloats * sizeof(float);
  // Named barriers (1 + w are the consumers' dK/dV stores): every consumer's dS^T is in shared
  // memory; between consumer w and the writer, w's part is staged (full); the turns; w's tile is
  // free again (empty).
  static constexpr int ds_barrier = 1 + consumers;
  static constexpr int dq_full(int w) { return ds_barrier + 1 + w; }
  using Turns = warpgroup::turns<consumers, dq_full(consumers)>;
  static constexpr int dq_empty(int w) { return Turns::kEndBarrier + w; }
  static_assert(dq_empty(consumers - 1) <= 15, "named barriers 1..15");
  static constexpr int dq_handoff_threads = 128 + 32;  // a consumer and the writer warp
};

// The FusedDq kernel's shared memory beyond the deterministic one's.
template <int D>
struct FusedDqSmem {
  using C = KvConfig<D, true>;
  typename C::ds_tile ds[C::consumers][C::ds_ring];
  struct alignas(128) staging {
    float data[kDqPartFloats];
  } dq[C::consumers];
};
struct NoSmem {};

template <int D, bool FusedDq = false>
struct KvSmem {
  using C = KvConfig<D, FusedDq>;
  typename C::kv k[C::consumers], v[C::consumers];
  typename C::q q[C::stages], d_o[C::stages];
  [[no_unique_address]] std::conditional_t<FusedDq, FusedDqSmem<D>, NoSmem> fused;
  typename C::vec lse2[C::stages], delta[C::stages];
  pipeline<1> kv_pipe;  // the item's K and V, loaded once
  pipeline<C::stages> pipe;

  // One thread, before any copy. Every consumer thread releases each stage: its own loads of the
  // stage's lse2 and D are reads the next bulk copy overwrites, and mbarrier.arrive orders only
  // the arriving thread's earlier accesses (PTX ISA 9.7.13.15, mbarrier.arrive: release). K and
  // V are never released: a block takes one item.
  __device__ void init() {
    kv_pipe.init(C::consumers * 4);
    pipe.init(C::consumer_threads);
  }
  static constexpr std::uint32_t kv_bytes = 2 * C::consumers * tma::bytes<typename C::kv>();
  static constexpr std::uint32_t step_bytes = 2 * tma::bytes<typename C::q>() + 2 * tma::bytes<typename C::vec>();
};
template <int D, bool FusedDq = false>
constexpr int kKvSmemBytes = sizeof(KvSmem<D, FusedDq>) + kSmemAlign;  // room to align the tiles
static_assert(kKvSmemBytes<64> <= kMaxSmemBytes && kKvSmemBytes<128> <= kMaxSmemBytes, "the stages must fit");
static_assert(kKvSmemBytes<64, true> <= kMaxSmemBytes && kKvSmemBytes<128, true> <= kMaxSmemBytes,
              "the stages, dS^T and the dQ staging must fit");

// ---- dQ ----
// Two consumer warpgroups of 64 queries each (Q and dO are the A operands of S = Q K^T and
// dP = dO V^T); keys come kQStepKeys at a time, so S and dP (64 registers each) fit beside dQ
// (D / 2).
template <int D>
struct QConfig {
  static constexpr int consumers = kQBlock / warpgroup::kRows;
  static constexpr int consumer_registers = 240, producer_registers = 24;
  static constexpr int threads = (1 + consumers) * 128;
  static constexpr int step = kQStepKeys;         // keys per step
  static constexpr int stages = D == 64 ? 4 : 2;  // a step's K and V: 32 KB at D = 64, 64 KB at 128

  using q = st<bf16, warpgroup::kRows, D>;  // a consumer's queries or dO, then its dQ on the way out
  using kv = st<bf16, step, D>;             // a step's keys or values
  using scores = rt_fl<16, step>;           // a warp's 16 queries x the step's keys: S, P, dP, dS
  using probs = rt_bf<16, step>;            // dS as the A operand of dQ += dS K
  using grad = rt_fl<16, D>;                // a warp's 16 rows of dQ
  using grad_bf = rt_bf<16, D>;
  using rows = scores::row_vec;             // a value per query row: lse2, D
  using Turns = warpgroup::turns<consumers, 1 + consumers>;  // after 1 + w, consumer w's dQ store
};

template <int D>
struct QSmem {
  using C = QConfig<D>;
  typename C::q q[C::consumers], d_o[C::consumers];
  typename C::kv k[C::stages], v[C::stages];
  pipeline<1> q_pipe;  // the item's Q and dO, loaded once
  pipeline<C::stages> pipe;

  __device__ void init() {
    q_pipe.init(C::consumers * 4);
    pipe.init(C::consumers * 4);
  }
  static constexpr std::uint32_t q_bytes = 2 * C::consumers * tma::bytes<typename C::q>();
  static constexpr std::uint32_t step_bytes = 2 * tma::bytes<typename C::kv>();
};
template <int D>
constexpr int kQSmemBytes = sizeof(QSmem<D>) + kSmemAlign;
static_assert(kQSmemBytes<64> <= kMaxSmemBytes && kQSmemBytes<128> <= kMaxSmemBytes, "the stages must fit");

// ---- the problem ----

// [batch][heads] grids of N x D matrices (tensor_maps.cuh).
struct KvMaps {
  grid_map k, v, q, d_o, dk, dv;
};
struct QMaps {
  grid_map q, d_o, k, v, dq;
};
// A packed batch's (../varlen_backward.hpp): each tensor a map per sequence (a grid of one batch,
// [heads] of its rows x D), and the items, in global memory.
struct VarlenKvMaps {
  const grid_map *k, *v, *q, *d_o, *dk, *dv;
  const VarlenKvItem* items;
  int count;  // items
};
struct VarlenQMaps {
  const grid_map *q, *d_o, *k, *v, *dq;
  const VarlenQItem* items;
};

// Where O's, dO's or dQ's rows lie for the preprocess and the conversion, which reach them without
// the TMA: element strides (attention::Strides; the head dim is contiguous). A packed tensor's
// (PackedStrides) are one batch's: {any, head, row}.
struct RowStrides {
  std::int64_t batch, head, seq;
  // Row r of query matrix qm = batch x heads + head.
  __device__ std::size_t at(int qm, int heads, int r) const {
    return std::size_t(qm / heads * batch + qm % heads * head + r * seq);
  }
};

// Where the preprocess and the conversion find scratch row g in the tensors (QueryRow): a dense
// batch's rows, or a packed batch's (../varlen_backward.hpp); and the LSE's rows per matrix.
struct DenseRows {
  int seq;
  __device__ QueryRow at(std::size_t g) const { return dense_query_row(seq, g); }
  __device__ int lse_rows() const { return seq; }
};
struct PackedRows {
  const RowBlock* blocks;
  int padded_rows, total_q;
  __device__ QueryRow at(std::size_t g) const { return packed_query_row(blocks, padded_rows, g); }
  __device__ int lse_rows() const { return total_q; }
};

// The scratch: LSE log2(e), so P = 2^(S scale log2(e) - lse2) is one FFMA and one MUFU.EX2, and
// D; each [batch][heads][padded(seq)]; on the reducing path then the fp32 dQ accumulator
// (../backward_schedule.hpp), null on the deterministic one.
struct Problem {
  Schedule schedule;  // with the keys' count and which keys each query attends (its Mask)
  float scale;       // 1 / sqrt(D): dQ and dK take it once, at the end
  float scale_log2;  // log2(e) / sqrt(D)
  float *lse2, *delta;
  float* dq_accumulator = nullptr;
  // Entry r of query matrix qm's scratch vectors.
  __device__ std::size_t row(int qm, int r) const { return std::size_t(qm) * padded(schedule.seq) + r; }
};

// A packed batch's problem: one matrix per head over every sequence's padded rows
// (../varlen_backward.hpp), so Problem::row and the accumulator's parts take a sequence's rows
// from its first padded row on.
inline Schedule varlen_schedule(const Varlen& s) {
  return {1, s.heads, s.kv_heads, padded_offsets(s).back(), Mask{0, 0, s.causal}};
}

// A block's work item and where its sequence lies: its maps (`seq`), its first row of the scratch,
// and its mask. A dense batch's item is computed, at place 0 with the problem's mask; a packed
// batch's is read from its table.
template <class Item>
struct Work {
  Item item;
  int seq, padded_row;
  Mask mask;
};
using KvWork = Work<KvItem>;
using QWork = Work<QItem>;

// `x` as lane 0 holds it, so ptxas knows it is the same in every lane and keeps what follows from
// it in uniform registers (config.cuh's warp_item says what a per-lane copy cost). Every lane must
// call it.
template <class T>
__device__ T warp_uniform(T x) {
  static_assert(sizeof(T) % sizeof(int) == 0, "whole words");
  int words[sizeof(T) / sizeof(int)];
  memcpy(words, &x, sizeof(T));
#pragma unroll
  for (int& w : words) w = __shfl_sync(0xffffffffu, w, 0);
  memcpy(&x, words, sizeof(T));
  return x;
}

// A packed batch's item t: its table's entry (every lane reads it, lane 0's is kept) and its sequence's mask.
template <class Item, class Table>
__device__ Work<Item> from_table(const Table* items, const Problem& p, int t) {
  const Table it = warp_uniform(items[t]);
  return {it.item, it.at.seq, it.at.padded_row, Mask{it.at.keys, it.at.keys - it.at.queries, p.schedule.mask.causal}};
}
__device__ inline KvWork kv_work(const KvMaps&, const Problem& p, int t, int step, bool staggered) {
  return {kv_item(p.schedule, t, step, staggered), 0, 0, p.schedule.mask};
}
__device__ inline KvWork kv_work(const VarlenKvMaps& maps, const Problem& p, int t, int, bool) {
  return from_table<KvItem>(maps.items, p, t);
}
__device__ inline int kv_item_count(const KvMaps&, const Problem& p) { return kv_items(p.schedule); }
__device__ inline int kv_item_count(const VarlenKvMaps& maps, const Problem&) { return maps.count; }
__device__ inline QWork q_work(const QMaps&, const Problem& p, int t) {
  return {q_item(p.schedule, t), 0, 0, p.schedule.mask};
}
__device__ inline QWork q_work(const VarlenQMaps& maps, const Problem& p, int t) {
  return from_table<QItem>(maps.items, p, t);
}

}  // namespace attention::hopper::backward
