#pragma once
// The Hopper attention backward's types, shared memory and problem (the kernels are in
// backward_preprocess.cuh, backward_dkdv.cuh and backward_dq.cuh, the work split in
// ../backward_schedule.hpp, the launcher in ../attention_hopper_backward.cu).
//
// Three kernels, no atomics (the same inputs give the same bits):
//   1. preprocess: per query row, D = rowsum(dO * O) and LSE in base 2, into a padded scratch;
//   2. dK, dV: a work item per (batch, key/value head, 128 keys) walks the query tiles of every
//      query head of its group, recomputing P^T = 2^(S^T scale log2 e - lse2) and
//      dS^T = P^T * (dP^T - D), and accumulates dV += P^T dO and dK += dS^T Q in registers;
//   3. dQ: a work item per (batch, query head, 128 queries) walks the key tiles, recomputing P
//      and dS the same way, and accumulates dQ += dS K in registers.
// Kernel 3 recomputes S and dP (two of the five products kernel 2 issues): the price of a dQ
// that needs neither fp32 atomics nor a reduction over key tiles.
#include <cstdint>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/backward_schedule.hpp"
#include "tk/warpgroup.cuh"

namespace attention::hopper::backward {

using namespace tk;
using namespace attention::backward;
using bf16 = __nv_bfloat16;

// ---- preprocess ----
constexpr int kPrepWarps = 8;  // rows per block: a warp per row
constexpr int kPrepThreads = kPrepWarps * 32;
constexpr int kPrepMaxBlocks = 1 << 16;  // the grid strides beyond

// ---- dK, dV ----
// Two consumer warpgroups of 64 keys each (their K and V slices are the A operands of
// S^T = K Q^T and dP^T = V dO^T). A consumer thread holds dK and dV (D floats between them)
// beside S^T and dP^T (32 each): 240 registers, as the forward's D = 128 consumers take, leaving
// the producer 24.
template <int D>
struct KvConfig {
  static constexpr int consumers = kKvBlock / warpgroup::kRows;
  static constexpr int consumer_registers = 240, producer_registers = 24;
  static constexpr int consumer_threads = consumers * 128;
  static constexpr int threads = 128 + consumer_threads;  // the producer warpgroup, then the consumers
  // A step's Q and dO are 2 x 16 KB at D = 128: three stages beside the item's K and V (64 KB)
  // take 163 KB; at D = 64 four take 100 KB.
  static constexpr int stages = D == 64 ? 4 : 3;

  using kv = st<bf16, warpgroup::kRows, D>;  // a consumer's keys or values, then its dK or dV on the way out
  using q = st<bf16, kKvStepQ, D>;           // a step's queries or dO
  using vec = sv<float, kKvStepQ>;           // a step's lse2 or D
  using scores = rt_fl<16, kKvStepQ>;        // a warp's 16 keys x the step's queries: S^T, P^T, dP^T, dS^T
  using probs = rt_bf<16, kKvStepQ>;         // P^T or dS^T as the A operand of dV += P^T dO, dK += dS^T Q
  using grad = rt_fl<16, D>;                 // a warp's 16 rows of dK or dV
  using grad_bf = rt_bf<16, D>;
  // S^T's columns are queries, so lse2 and D are column vectors, applied a 16-column slice at a
  // time: the whole quad_vl vector of 64 would hold 16 registers per thread.
  static constexpr int slice = 16;
  using slice_tile = rt_fl<16, slice>;
  using slice_vec = slice_tile::col_vec;
};

template <int D>
struct KvSmem {
  using C = KvConfig<D>;
  typename C::kv k[C::consumers], v[C::consumers];
  typename C::q q[C::stages], d_o[C::stages];
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
template <int D>
constexpr int kKvSmemBytes = sizeof(KvSmem<D>) + kSmemAlign;  // room to align the tiles
static_assert(kKvSmemBytes<64> <= kMaxSmemBytes && kKvSmemBytes<128> <= kMaxSmemBytes, "the stages must fit");

// ---- dQ ----
// Two consumer warpgroups of 64 queries each (Q and dO are the A operands of S = Q K^T and
// dP = dO V^T); keys come 64 at a time, so S and dP (32 registers each) fit beside dQ (D / 2).
template <int D>
struct QConfig {
  static constexpr int consumers = kQBlock / warpgroup::kRows;
  static constexpr int consumer_registers = 240, producer_registers = 24;
  static constexpr int threads = (1 + consumers) * 128;
  static constexpr int stages = D == 64 ? 4 : 3;

  using q = st<bf16, warpgroup::kRows, D>;  // a consumer's queries or dO, then its dQ on the way out
  using kv = st<bf16, kQStepKv, D>;         // a step's keys or values
  using scores = rt_fl<16, kQStepKv>;       // a warp's 16 queries x the step's keys: S, P, dP, dS
  using probs = rt_bf<16, kQStepKv>;        // dS as the A operand of dQ += dS K
  using grad = rt_fl<16, D>;                // a warp's 16 rows of dQ
  using grad_bf = rt_bf<16, D>;
  using rows = scores::row_vec;             // a value per query row: lse2, D
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

// Where O's or dO's rows lie for the preprocess, which reads them without the TMA: element
// strides (attention::Strides; the head dim is contiguous).
struct RowStrides {
  std::int64_t batch, head, seq;
  // Row r of query matrix qm = batch x heads + head.
  __device__ std::size_t at(int qm, int heads, int r) const {
    return std::size_t(qm / heads * batch + qm % heads * head + r * seq);
  }
};

// The scratch: LSE log2(e), so P = 2^(S scale log2(e) - lse2) is one FFMA and one MUFU.EX2, and
// D; each [batch][heads][padded(seq)].
struct Problem {
  Schedule schedule;
  float scale;       // 1 / sqrt(D): dQ and dK take it once, at the end
  float scale_log2;  // log2(e) / sqrt(D)
  float *lse2, *delta;
  // Entry r of query matrix qm's scratch vectors.
  __device__ std::size_t row(int qm, int r) const { return std::size_t(qm) * padded(schedule.seq) + r; }
};

}  // namespace attention::hopper::backward
