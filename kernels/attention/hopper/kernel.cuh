#pragma once
// The Hopper FlashAttention forward (attention.hpp), in the DSL. A persistent grid, one block
// per SM, walks work items of 128 or 192 query rows of one (batch, head). In each block a
// producer warpgroup streams Q and the K and V tiles with the TMA, through a ring of stages
// that runs on from one item to the next, and two or three consumer warpgroups of 64 query rows
// each run the online softmax between two wgmma products (S = Q K^T, O += P V). The TMA
// zero-fills the rows of Q, K and V past their ends and drops the rows of O past it; the
// scores of keys past it are masked to -inf, as are, with a causal mask, those right of the
// diagonal (../mask.hpp). One kernel for every element type: the config
// (config.cuh: bf16; config_fp8.cuh: e4m3) gives the tiles, P's conversion and the P V product.
#include <cmath>
#include <type_traits>

#include "kernels/attention/hopper/config.cuh"

namespace attention::hopper {

// The producer warpgroup's lane 0 of warps 0, 1 and 2 stream Q, K and V each through a ring of
// its own that runs on from one item to the next: a stream never waits for another's slots.
enum class Stream { q, k, v };

// One item's K or V tiles, one step of `ring` each: key tile j is tile (j, 0) of an N x D matrix,
// or (0, j) of a D x N one (Transposed: e4m3's V^T).
template <bool Transposed, class Ring, class Tile>
__device__ void stream_tiles(Ring& ring, Tile* tiles, const grid_map& map, const Item& it, int& step) {
  const grid_matrix kv = matrix_of(map, it.kvh);  // once an item (tk/types/gl.cuh)
  for (int j = 0; j < it.tiles; ++j, ++step)
    tma::load_async(tiles[ring.stage(step)], map, Transposed ? 0 : j, Transposed ? j : 0,
                    ring.acquire(step, tma::bytes<Tile>()), kv);
}

template <class C>
__device__ void produce(Smem<C>& sm, const typename C::maps& maps, const Problem& p, Stream stream) {
  for (int t = blockIdx.x, n = 0, step = 0; t < p.items(); t += gridDim.x, ++n) {
    const Item it = item<C>(maps, p, t);
    if (stream == Stream::q) {
      const std::uint32_t full = sm.q_pipe.acquire(n, C::consumers * tma::bytes<typename C::q>());
      const grid_map& map = map_of(maps.q, it.seq);
      const grid_matrix q = matrix_of(map, it.qh);
      for (int w = 0; w < C::consumers; ++w)
        tma::load_async(sm.q[sm.q_pipe.stage(n)][w], map, it.q_tile + w, 0, full, q);
    } else if (stream == Stream::k) {
      stream_tiles<false>(sm.k_pipe, sm.k, map_of(maps.k, it.seq), it, step);
    } else {
      stream_tiles<C::v_transposed>(sm.v_pipe, sm.v, map_of(maps.v, it.seq), it, step);
    }
  }
}

// Consumer w's O tile for item n: its own, or (C::o_in_q) its Q slot, free once the item's last S is.
template <class C>
__device__ typename C::o_tile& o_tile(Smem<C>& sm, int n, int w) {
  if constexpr (C::o_in_q) {
    return sm.q[sm.q_pipe.stage(n)][w];
  } else {
    return sm.out.o[w];
  }
}

// O / l (times o_scale where the config says so) leaves through the consumer's O tile (named barrier 1 + w), and the
// row logsumexp beside it: ln(sum exp(q.k / sqrt(D))) = (m scale + log2 l) ln 2 (m the raw max). Rows that attend no
// key (mask.hpp; a shifted config's), computed against key 0, leave as O = 0 and LSE = +inf. A packed
// batch's LSE is [heads][total_q]: the sequence's rows from its first.
template <class C>
__device__ void store_output(Smem<C>& sm, const typename C::maps& maps, const Problem& p, const Item& it, int n,
                             typename C::out& o, const typename C::rows& m, typename C::rows& l, int row0) {
  const int w = warpgroup::index() - 1;
  typename C::out_bf o_bf;
  typename C::rows lse;
  warp::fill(lse, C::scaled_output ? p.o_scale : 1.0f);
  warp::sum_row_parts(l);  // the online softmax kept each lane's part of the row sums
  warp::div(lse, lse, l);  // 1 / l (o_scale / l): one division per row instead of per element
  const auto keyless = [&](int r) { return C::shifted && mask_of<C>(p, it).attends_none(row0 + r); };
  const bool any_keyless = keyless(0);  // the warp's first row: the mask leaves a prefix of rows keyless
  if (any_keyless) warp::fill_where(lse, 0.0f, keyless);
  warp::mul_row(o, o, lse);
  warp::copy(o_bf, o);
  warpgroup::store_async(map_of(maps.o, it.seq), o_tile(sm, n, w), o_bf, it.q_tile + w, 0, 1 + w, it.qh);
  warp::log2(l, l);
  warp::mul(lse, m, p.scale_log2);
  warp::add(lse, lse, l);
  warp::mul(lse, lse, float(M_LN2));
  if (any_keyless) warp::fill_where(lse, INFINITY, keyless);
  if constexpr (C::varlen) {
    const int rows = it.mask.keys - it.mask.shift;
    warp::store(p.lse + std::size_t(it.qh) * p.seq + it.first_row + row0, lse, rows - row0);
  } else {
    warp::store(p.lse + std::size_t(it.qh) * p.seq + row0, lse, p.seq - row0);
  }
}

// Masks the scores of keys kv0.. against rows row0.. (this warp's; q0 its warpgroup's first) that
// lie past the keys or, with a causal mask, right of a row's diagonal (../mask.hpp). Rows before
// row 0 (a causal first block's padding) stay unmasked, and rows that attend no key keep key 0:
// finite, and never stored as they are. Without a shift, the diagonal is row0 + r as written
// here: ptxas schedules the kernel's loops by it (Config's Shifted).
template <class C>
__device__ void mask(typename C::scores& s, const Problem& p, const Mask& m, int kv0, int q0, int row0) {
  if constexpr (!C::shifted) {
    if (q0 >= 0 && (kv0 + C::block_kv > p.seq || (p.causal && kv0 + C::block_kv - 1 > q0))) {
      warp::fill_where(s, -INFINITY,
                       [&](int r, int c) { return kv0 + c >= p.seq || (p.causal && kv0 + c > row0 + r); });
    }
  } else if (q0 >= 0 && m.needs_mask(q0, kv0, C::block_kv)) {
    warp::fill_where(s, -INFINITY, [&](int r, int c) { return m.hides(row0 + r, kv0 + c); });
  }
}

// Issues S = Q K^T of an item's first key tile (Q slot n, ring step `step`) for consumer w.
template <class C>
__device__ void issue_first_scores(Smem<C>& sm, typename C::scores& s, int w, int n, int step) {
  sm.q_pipe.wait_full(n);
  sm.k_pipe.wait_full(step);
  warpgroup::mma_fence();
  warpgroup::mma_ABt(s, sm.q[sm.q_pipe.stage(n)][w], sm.k[sm.k_pipe.stage(step)], false);
  warpgroup::mma_commit();
}

// C::o_in_q: once the copy engine has read consumer w's O out of its Q slot, the slot goes back to
// the producer for item n + 1's Q, and (Next) that item's first S is issued in a turn of its own
// (every consumer takes it, so the turns stay paired).
template <class C, bool Next>
__device__ void hand_back_q_slot(Smem<C>& sm, typename C::scores& s, const Turns<C>& turn, int w, int n,
                                 int next_step) {
  if (warpgroup::thread() == 0) tma::store_wait_read<0>();
  warpgroup::sync(1 + w);
  if (threadIdx.x % 32 == 0) sm.q_pipe.release(n);
  if constexpr (Next) {
    turn.wait();
    issue_first_scores(sm, s, w, n + 1, next_step);
    turn.pass();
  }
}

// Consumer w of item n, `it`: 64 query rows from q0, each warp 16 of them from row0; the item's
// first ring step is `step`, and the S of its first key tile is already in flight in `s`.
// S of key tile j and P V of tile j - 1 go in one turn, and the next item's first S with this
// item's last P V, to run under this item's output. ptxas waits for P V after the row max (see
// the wait below): the rest of a consumer's softmax runs under the others' products.
// `Next`: whether another item follows (a template parameter: ptxas serialises every wgmma of a
// kernel whose wgmmas are issued under a runtime condition, C7515).
template <class C, bool Next>
__device__ void consume(Smem<C>& sm, const typename C::maps& maps, const Problem& p, const Item& it, int n, int step,
                        typename C::scores& s) {
  const int w = warpgroup::index() - 1;
  const Mask attended = mask_of<C>(p, it);
  const int q0 = (it.q_tile + w) * warpgroup::kRows, row0 = q0 + warpgroup::warp_row();
  // With a causal mask the tiles past these 64 rows' diagonal are all future: only released (all
  // but the first, for rows before row 0).
  const int key_end = q0 + warpgroup::kRows + attended.shift;  // past the rows' last key (<= 0: they attend none)
  const int mine = p.causal ? max(1, min(it.tiles, (key_end + C::block_kv - 1) / C::block_kv)) : it.tiles;
  const bool releaser = threadIdx.x % 32 == 0;
  const Turns<C> turn{w};
  const typename C::q& q = sm.q[sm.q_pipe.stage(n)][w];
  typename C::probs pr;
  typename C::out o;
  typename C::rows m, l, rescale;
  warp::neg_inf(m);
  warp::zero(l);
  warp::zero(o);

  warpgroup::mma_wait<0>();  // S of tile 0
  if (releaser) sm.k_pipe.release(step);
  mask<C>(s, p, attended, 0, q0, row0);
  warp::online_softmax(s, m, l, rescale, p.scale_log2);
  C::to_probs(pr, s);
  // Key tile j >= 1, masked or not (first_masked_tile): the masked tiles, the last, have a loop of
  // their own, so in the other the softmax and the wait for S are one basic block, where ptxas waits
  // for P V after the row max; with the mask's branch in it, at the softmax's top (1.9-6.5% slower).
  const auto key_tile = [&](int j, auto masked) {
    // K before the turn, V only between the products: V's load starts a softmax after K's, and
    // S need not wait for it (measured 1.6-3.0% faster at D = 128, 0.3-0.6% slower at D = 64).
    sm.k_pipe.wait_full(step + j);
    turn.wait();
    warpgroup::mma_fence();
    warpgroup::mma_ABt(s, q, sm.k[sm.k_pipe.stage(step + j)], false);
    warpgroup::mma_commit();
    sm.v_pipe.wait_full(step + j - 1);
    warpgroup::mma_fence();  // P V reads registers across the wait's branch: ptxas would add it (C7519)
    C::mma_pv(o, pr, sm.v[sm.v_pipe.stage(step + j - 1)]);
    warpgroup::mma_commit();
    turn.pass();
    warpgroup::mma_wait<1>();  // S of tile j: its K tile is free
    if (releaser) sm.k_pipe.release(step + j);
    if constexpr (decltype(masked)::value) mask<C>(s, p, attended, j * C::block_kv, q0, row0);
    warp::online_softmax(s, m, l, rescale, p.scale_log2);
    // P V of tile j - 1 (O, P, its V tile free): ptxas places it after the row max, packing P among
    // the exponentials; the whole softmax under P V measured 1.4-3.5% slower (results/experiments).
    warpgroup::mma_wait<0>();
    if (releaser) sm.v_pipe.release(step + j - 1);
    warp::mul_row(o, o, rescale);
    C::to_probs(pr, s);
  };
  const int unmasked = min(mine, first_masked_tile<C>(p, attended, q0));
  for (int j = 1; j < unmasked; ++j) key_tile(j, std::false_type{});
  for (int j = max(1, unmasked); j < mine; ++j) key_tile(j, std::true_type{});
  if (releaser && !C::o_in_q) sm.q_pipe.release(n);  // no product reads this Q any more
  for (int j = mine; j < it.tiles; ++j) {  // tiles past the diagonal: released unread
    turn.wait();
    turn.pass();
    sm.k_pipe.wait_full(step + j);
    sm.v_pipe.wait_full(step + j);
    if (releaser) { sm.k_pipe.release(step + j); sm.v_pipe.release(step + j); }
  }
  turn.wait();
  sm.v_pipe.wait_full(step + mine - 1);
  warpgroup::mma_fence();
  C::mma_pv(o, pr, sm.v[sm.v_pipe.stage(step + mine - 1)]);
  warpgroup::mma_commit();
  constexpr bool next_s_here = Next && !C::o_in_q;  // the next item's first S in this turn
  if constexpr (next_s_here) issue_first_scores(sm, s, w, n + 1, step + it.tiles);
  turn.pass();
  warpgroup::mma_wait<next_s_here ? 1 : 0>();  // the last P V (the next S may still run)
  if (releaser) sm.v_pipe.release(step + mine - 1);
  if (q0 >= 0) store_output<C>(sm, maps, p, it, n, o, m, l, row0);
  if constexpr (C::o_in_q) hand_back_q_slot<C, Next>(sm, s, turn, w, n, step + it.tiles);
}

template <class C>
__global__ void __launch_bounds__(C::threads, 1)
    forward_kernel(const __grid_constant__ typename C::maps maps, const Problem p) {
  extern __shared__ std::uint8_t raw[];
  Smem<C>& sm = aligned_smem<Smem<C>>(raw);
  if (threadIdx.x == 0) sm.init();
  __syncthreads();

  if (warpgroup::index() == 0) {
    warpgroup::decrease_registers<C::producer_registers>();
    if (warpgroup::thread() % 32 == 0 && warpgroup::thread() < 96) produce(sm, maps, p, Stream(warpgroup::thread() / 32));
    return;
  }
  warpgroup::increase_registers<C::consumer_registers>();
  const int w = warpgroup::index() - 1;
  const Turns<C> turn{w};
  turn.start();
  typename C::scores s;
  turn.wait();
  issue_first_scores(sm, s, w, 0, 0);
  turn.pass();
  int t = blockIdx.x, n = 0, step = 0;
  for (; t + int(gridDim.x) < p.items(); t += gridDim.x, ++n) {
    const Item it = warp_item<C>(maps, p, t);
    consume<C, true>(sm, maps, p, it, n, step, s);
    step += it.tiles;
  }
  consume<C, false>(sm, maps, p, warp_item<C>(maps, p, t), n, step, s);
  turn.finish();
  if (warpgroup::thread() == 0) tma::store_wait_read<0>();  // the O tile must outlive its last store
}

}  // namespace attention::hopper
