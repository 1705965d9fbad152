#pragma once
// The Hopper attention forward's shapes, shared memory and work schedule (the kernel is in
// kernel.cuh, its launcher in ../attention_hopper.cu).
#include <cstdint>
#include <type_traits>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/hopper/tensor_maps.cuh"
#include "kernels/attention/varlen.hpp"
#include "kernels/attention/work_order.hpp"
#include "tk/warpgroup.cuh"

namespace attention::hopper {

using namespace tk;
using bf16 = __nv_bfloat16;

constexpr int kBlockKV = 128;  // keys per tile (D = 256: Tiling<256>::block_kv)

// Per head dimension: consumer warpgroups of 64 query rows each, their registers (setmaxnreg),
// keys per tile, the K and V stages and Q slots shared memory holds, and whether O leaves through
// the consumer's Q slot instead of a tile of its own. At D = 64 three consumers fit in the
// registers (128 x (24 + 3 x 160) <= 64K), and keep the tensor cores busy while any one of them is
// in its softmax. At D = 128 a consumer's S and O take 128 registers: ptxas serialises the wgmmas
// below 168, so two consumers of 240, as at D = 96 (O 48 beside S and P: three consumers of 160
// would spill), whose 24 KB K and V tiles leave room for three stages each (216 KB). At D = 256 O
// alone takes 128: S and P over 64 keys fit beside it; Q (32 KB a consumer) and two stages each of
// 32 KB K and V tiles fill 192 KB, so one Q slot, which O leaves through (a second slot or O tiles
// of their own would need 256 KB).
template <int Consumers, int ConsumerRegisters, int BlockKV, int KStages, int VStages, int QSlots, bool OInQ>
struct TilingOf {
  static constexpr int consumers = Consumers, consumer_registers = ConsumerRegisters, block_kv = BlockKV,
                       k_stages = KStages, v_stages = VStages, q_slots = QSlots;
  static constexpr bool o_in_q = OInQ;
};
template <int D>
struct Tiling;
template <>
struct Tiling<64> : TilingOf<3, 160, kBlockKV, 4, 4, 2, false> {};
template <>
struct Tiling<96> : TilingOf<2, 240, kBlockKV, 3, 3, 2, false> {};
template <>
struct Tiling<128> : TilingOf<2, 240, kBlockKV, 2, 2, 2, false> {};
template <>
struct Tiling<256> : TilingOf<2, 240, 64, 2, 2, 1, true> {};

// What the kernel (kernel.cuh) asks of a config, besides its types and sizes: how P goes from S
// to the A operand of P V, that product, and whether O is multiplied by Problem::o_scale on the
// way out. bf16 below (its sizes per head dimension: Tiling); e4m3 in config_fp8.cuh.
//
// Shifted: keys and queries of different counts (the causal diagonal off the corner: ../mask.hpp).
// A config of its own, so that the kernel of equal counts masks as it did without the shift: with
// the shift in its mask, ptxas placed the D = 128 forward's wait for P V before the softmax's
// exponentials, 2.3-2.5% slower per clock (docs/decisions/031-causal-mask-at-the-bottom-right.md).
// Varlen: a packed batch (../varlen.hpp), its items from a table, each sequence with maps and a
// mask of its own (shifted, as its counts may differ).
struct Maps;
struct VarlenMaps;
template <int D, bool Shifted = false, bool Varlen = false>
struct Config : Tiling<D> {
  using Tiling<D>::consumers, Tiling<D>::block_kv;
  static constexpr int head_dim = D;
  static constexpr bool varlen = Varlen;
  static constexpr bool shifted = Shifted || Varlen;
  using maps = std::conditional_t<Varlen, VarlenMaps, Maps>;  // the kernel's tensor maps
  static constexpr int producer_registers = 24;
  static constexpr int threads = (1 + consumers) * 128;
  static constexpr int block_q = consumers * warpgroup::kRows;  // query rows per item

  using q = st<bf16, warpgroup::kRows, D>;  // one consumer's queries
  using o_tile = q;                         // and its output on the way out
  using kv = st<bf16, block_kv, D>;         // a tile of keys
  using v_tile = kv;                        // and of values, keys down (MN-major for P V)
  static constexpr bool v_transposed = false;
  using scores = rt_fl<16, block_kv>;       // each warp's 16 rows of S
  using probs = rt_bf<16, block_kv>;        // and of P, the A operand of P V
  using out = rt_fl<16, D>;                 // each warp's 16 rows of O, accumulated
  using out_bf = rt_bf<16, D>;
  using rows = scores::row_vec;             // a value per row: max, sum, rescale factor
  // K and V have rings of their own: a K tile is free once S is, a V tile only once P V is, a
  // softmax later. At D = 128 shared memory (two Q slots, O, and 32 KB tiles) holds 2 + 2 stages:
  // 224 KB (kSmemBytes), and V's loads run late enough that a step waits for its V tile only
  // between S and P V (kernel.cuh; a third V stage, O moving to the Q slot, measured slower:
  // results/experiments/attention-keys-160-o-in-q.patch).
  // Causal items a chunk of heads at a time (work_order.hpp's chunked) or across every head
  // (snaked). Chunks measured faster only at D = 128 where a wave of the snake would read a head
  // per item (batch x heads >= the grid), each item's K and V then from DRAM; elsewhere the
  // snake's balance wins (docs/decisions/017-forward-causal-order.md).
  __device__ static bool causal_chunks(int matrices) { return D == 128 && matrices >= int(gridDim.x); }

  __device__ static void to_probs(probs& pr, const scores& s) { warp::copy(pr, s); }
  __device__ static void mma_pv(out& o, const probs& pr, const v_tile& v) { warpgroup::mma_AB(o, pr, v); }
  static constexpr bool scaled_output = false;  // O leaves as O / l
};

// Named barriers: 1 + w for consumer w alone; kTurns + w for its turn at the tensor cores.
// Consumers take turns to issue their products, so one's products run under the others'
// softmax instead of all of them queueing at the tensor cores together and then all computing
// exponentials together: measured faster on every shape of the sweep
// (docs/decisions/014-consumer-turns.md). Every consumer
// takes one turn per key tile of each item (tiles past its causal diagonal too), and one for the
// block's first S, so the turns stay paired.
constexpr int kTurns = 4;
template <class C>
using Turns = warpgroup::turns<C::consumers, kTurns>;

// Each consumer's O on the way out: a tile of its own, or (C::o_in_q) its Q slot's.
template <class C>
struct OTiles {
  typename C::o_tile o[C::consumers];
};
struct InQSlots {};

// Q has two slots where they fit, so the next item's Q lands during this item.
template <class C>
struct Smem {
  typename C::q q[C::q_slots][C::consumers];
  [[no_unique_address]] std::conditional_t<C::o_in_q, InQSlots, OTiles<C>> out;
  typename C::kv k[C::k_stages];
  typename C::v_tile v[C::v_stages];
  pipeline<C::q_slots> q_pipe;
  pipeline<C::k_stages> k_pipe;
  pipeline<C::v_stages> v_pipe;

  // One thread, before any copy: every consumer warp releases each Q slot and K and V stage.
  __device__ void init() {
    q_pipe.init(C::consumers * 4);
    k_pipe.init(C::consumers * 4);
    v_pipe.init(C::consumers * 4);
  }
};
template <class C>
constexpr int kSmemBytes = sizeof(Smem<C>) + kSmemAlign;  // room to align the tiles
static_assert(kSmemBytes<Config<64>> <= kMaxSmemBytes && kSmemBytes<Config<96>> <= kMaxSmemBytes &&
                  kSmemBytes<Config<128>> <= kMaxSmemBytes && kSmemBytes<Config<256>> <= kMaxSmemBytes,
              "the stages must fit");

struct Maps {
  grid_map q, k, v, o;  // [batch][heads] grids of N x D matrices (tensor_maps.cuh); e4m3: v is V^T's, D x N
};
// A packed batch's: each tensor a map per sequence (a grid of one batch, [heads] of its rows x D),
// and the work items (../varlen.hpp's varlen_items), in global memory.
struct VarlenMaps {
  const grid_map *q, *k, *v, *o;
  const VarlenItem* items;
};

struct Problem {
  int seq, heads, kv_heads, matrices, q_blocks;  // seq: queries; matrices: batch x heads (varlen: total_q; 1)
  int lead_tiles;  // 64-row tiles the first block of rows starts before row 0 (forward_problem)
  bool causal;
  Mask mask;         // the keys each query attends (../mask.hpp)
  float scale_log2;  // log2(e) / sqrt(D): the softmax runs in base 2 (e4m3: times q_scale k_scale)
  float* lse;
  float o_scale;     // e4m3: what O is multiplied by before its store (v_scale over P's scale); bf16: unused
  __host__ __device__ int items() const { return q_blocks * matrices; }
};

// Work item t: a block of query rows of one (batch, head) and the key tiles it reads (all, or
// with a causal mask those its last row attends; at least one, which a block whose rows attend
// no key computes and stores as O = 0, LSE = +inf: kernel.cuh). Without a mask items run head by
// head, so the blocks in flight share one head's K and V in L2 (at N = 16384 a head's are 4-8 MB; 132 heads'
// would overflow it). With one, longest first, each block's longest of a wave followed by its
// shortest of the next, so the grid's blocks, taking items in turn, finish together: across every
// head, or a chunk of heads at a time (../work_order.hpp; the config's causal_chunks).
struct Item {
  int q_tile, qh, kvh, tiles;  // q_tile: the first 64-row tile (< 0: before row 0); qh, kvh: the Q/O and K/V matrices
  int seq, first_row;          // varlen: the sequence, its first row of the packed Q
  Mask mask;                   // varlen: the sequence's
};
// A packed batch's item t: its table's entry, heads within the sequence's maps.
template <class C>
__device__ Item item(const VarlenMaps& maps, const Problem& p, int t) {
  const VarlenItem it = maps.items[t];
  const Mask mask{it.keys, it.keys - it.queries, p.causal};
  return {it.q_tile, it.head, it.head / (p.heads / p.kv_heads), it.tiles, it.seq, it.first_row, mask};
}
template <class C>
__device__ Item item(const Maps&, const Problem& p, int t) {
  const WorkOrder c = !p.causal                     ? head_by_head(t, p.q_blocks)
                      : C::causal_chunks(p.matrices) ? chunked(t, gridDim.x, p.matrices, p.q_blocks)
                                                     : snaked(t, gridDim.x, p.matrices, p.q_blocks);
  const int qh = c.matrix, q_block = p.causal ? p.q_blocks - 1 - c.order : c.order;
  const int head = qh % p.heads, kvh = qh / p.heads * p.kv_heads + head / (p.heads / p.kv_heads);
  const int q_tile = q_block * C::consumers - p.lead_tiles;
  // Mask::key_end without its clamp at 0 (max(1, ...) covers it): the clamp's branches moved a
  // wgmma wait in the item loop of the kernel of equal counts.
  const int rows_end = (q_tile + C::consumers) * warpgroup::kRows;
  const int key_end = p.causal ? min(p.mask.keys, rows_end + p.mask.shift) : p.mask.keys;
  return {q_tile, qh, kvh, max(1, (key_end + C::block_kv - 1) / C::block_kv)};
}

// Item t as a warp's lanes all see it: a packed batch's, read from memory, broadcast from lane 0, so
// that ptxas knows it is the same in every lane and keeps what follows from it in uniform registers
// (read as each lane's own, the key-tile loop of D = 128 grew by 96 instructions, R2UR and IMAD for
// the ring's stages, and its wait for P V moved before the exponentials). Every lane must call it.
template <class C>
__device__ Item warp_item(const typename C::maps& maps, const Problem& p, int t) {
  Item it = item<C>(maps, p, t);
  if constexpr (C::varlen) {
    for (int* field : {&it.q_tile, &it.qh, &it.kvh, &it.tiles, &it.seq, &it.first_row, &it.mask.keys, &it.mask.shift})
      *field = __shfl_sync(0xffffffffu, *field, 0);
  }
  return it;
}

// The mask of item `it`'s rows: the problem's, or a packed batch's sequence's.
template <class C>
__device__ Mask mask_of(const Problem& p, const Item& it) {
  return C::varlen ? it.mask : p.mask;
}

// The first key tile whose scores the kernel masks for the 64 rows from q0 >= 0 (every later one
// too): the one that holds the keys' end or, with a causal mask, a key past q0's diagonal.
template <class C>
__device__ int first_masked_tile(const Problem& p, const Mask& m, int q0) {
  return p.causal ? min(m.keys / C::block_kv, (q0 + 1 + m.shift) / C::block_kv) : m.keys / C::block_kv;
}

// Shape s's problem for config C, its blocks of C::block_q rows. With a causal mask they end at
// the sequence's end: where N is not a multiple of block_q, the padding falls in the first block,
// the shortest item, whose consumers wholly before row 0 compute one tile and store nothing,
// instead of the last, the longest, where it left most of the block's consumers idle.
template <class C>
Problem forward_problem(const Shape& s, float scale_log2, float* lse, float o_scale) {
  const int q_blocks = (s.seq + C::block_q - 1) / C::block_q;
  const int lead_tiles = s.causal ? padding_tiles(s.seq, C::block_q, warpgroup::kRows) : 0;
  return {s.seq,      s.heads, s.kv_heads, s.batch * s.heads, q_blocks, lead_tiles, s.causal, mask_of(s),
          scale_log2, lse,     o_scale};
}

// A packed batch's problem (../varlen.hpp): its items from a table, each with its sequence's mask;
// LSE is [heads][total_q], so Problem::seq is the total.
inline Problem varlen_problem(const Varlen& s, int items, float scale_log2, float* lse) {
  return {s.total_q(), s.heads, s.kv_heads, 1, items, 0, s.causal, Mask{0, 0, s.causal}, scale_log2, lse, 1.0f};
}

}  // namespace attention::hopper
