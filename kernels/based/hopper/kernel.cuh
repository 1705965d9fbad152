#pragma once
// The Hopper Based forward (based.hpp), in the DSL: the chunked causal recurrence. One block per
// (batch, head), one warpgroup per 64 value columns, walking the sequence in chunks of 64 rows;
// per chunk c
//
//   intra-chunk  S = Q K^T, A = phi(S / 4) masked causal, O = A V        (wgmma, A from registers)
//   inter-chunk  O += f_q(Q) State                          (wgmma, f_q built in registers)
//                State += f_k(K)^T V    after the readout: chunks < c only (wgmma)
//   normalized   O /= rowsum(A) + f_q(Q) z,   z += colsum f_k(K)   (as K^T K and K^T 1: mma.sync)
//
// with the 160 folded features of ../feature_map.hpp; f_k goes to shared memory (the update's B)
// while the readout runs. The state (fp32, in registers, transposed: value dim x features) goes to
// shared memory as bf16 after each chunk, as the next readout's B operand; z's fp32 Gram sums stay
// in shared memory, added by warp 0 (add_key_gram). The TMA zero-fills rows of Q, K, V past the
// sequence. They lie in the last chunk, so its update of the state (which they would
// spoil: a zero key's constant feature is 1) is never read; their scores lie in the causal mask
// of every real row, and their output rows are never stored.
#include <utility>

#include "kernels/based/hopper/config.cuh"

namespace based::hopper {

// Thread 0: chunk c's Q, K and V (each warpgroup's columns its own tile) into its stage, once its
// previous use is released.
template <int Dv>
__device__ void load_chunk(Smem<Dv>& sm, const Maps& maps, int bh, int c) {
  using C = Config<Dv>;
  const int s = sm.chunks.stage(c);
  const std::uint32_t bar = sm.chunks.acquire(c, 2 * tma::bytes<QkTile>() + C::consumers * tma::bytes<typename C::v>());
  tma::load_async(sm.q[s], maps.q, c, 0, bar, bh);
  tma::load_async(sm.k[s], maps.k, c, 0, bar, bh);
  for (int w = 0; w < C::consumers; ++w) tma::load_async(sm.v[s][w], maps.v, c, w, bar, bh);
}

template <class ST>
__device__ void clear(ST& t) {
  for (int i = threadIdx.x; i < ST::bytes / 16; i += blockDim.x) reinterpret_cast<uint4*>(t.data)[i] = uint4{};
}

// A lane's two rows of a chunk's Q or K (rows g and g + 8 of its warp's 16, g = lane / 4), each
// rotated by the lane's first column 2t (t = lane % 4): pair i holds entries 2(i + t) and
// 2(i + t) + 1 (mod 16) of the row, times `scale`. Column 2t + e + 8h of a slice then takes entries
// 8h + e and 8h + e + offset of the rotated row (feature_map.hpp), fixed at compile time. Eight 4-byte
// reads a row; the 32-byte swizzle puts rows g and g + 4 in different banks, so none conflict.
using Pair = __nv_bfloat162;
using RotatedRow = Pair[kFeatureDim / 2];
__device__ void load_rotated_rows(RotatedRow (&x)[2], const QkTile& tile, float scale) {
  const int lane = threadIdx.x % 32, t = lane % 4, row = warpgroup::warp_row() + lane / 4;
  const Pair s = __float2bfloat162_rn(scale);
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int w = 0; w < kFeatureDim / 2; ++w)
      x[i][w] = __hmul2(*reinterpret_cast<const Pair*>(tile.data + QkTile::offset(row + 8 * i, 2 * ((w + t) % 8))), s);
}

// Entries J and J + 1 (mod 16) of a rotated row.
template <int J>
__device__ Pair entries(const RotatedRow& x) {
  constexpr int w = J / 2 % (kFeatureDim / 2);
  if constexpr (J % 2 == 0)
    return x[w];
  else
    return Pair{x[w].y, x[(w + 1) % (kFeatureDim / 2)].x};
}

// The query's entries are loaded as q/4 (x = (q/4).k): a term of n entries then has (1/4)^n of its
// constant already, and the rest, a power of two, is one exact multiply.
constexpr float kQueryPrescale = 0.25f;
constexpr float residual_scale(HalfSlice h) {
  const int entries = h.term == Term::product ? 2 : h.term == Term::linear ? 1 : 0;
  float prescaled = 1.0f;
  for (int i = 0; i < entries; ++i) prescaled *= kQueryPrescale;
  return h.q_scale / prescaled;
}

// Columns 2t and 2t + 1 of half H of slice S of a rotated row: f_q's (from q/4) or f_k's. Products
// of two bf16 are exact in the packed multiply, so each feature is rounded once, as from fp32.
template <bool Query, int S, int H>
__device__ Pair feature_pair(const RotatedRow& x, int t) {
  constexpr HalfSlice h = half_slice(S, H);
  if constexpr (h.term == Term::constant_first) {
    return t == 0 ? Pair{1.0f, 0.0f} : Pair{0.0f, 0.0f};
  } else {
    const Pair f = h.term == Term::linear ? entries<8 * H>(x) : __hmul2(entries<8 * H>(x), entries<8 * H + h.offset>(x));
    constexpr float residual = Query ? residual_scale(h) : 1.0f;
    if constexpr (residual == 1.0f)
      return f;
    else
      return __hmul2(f, Pair{residual, residual});
  }
}

// Slices First .. First + N - 1 of f_q or f_k of this warp's 16 rows as a register tile: pair p of
// subtile j is row p % 2 of the lane's two, half p / 2 of slice First + j (tk/layout/rt_layout.hpp).
template <bool Query, int First, int... J>
__device__ void feature_map(rt_bf<16, 16 * sizeof...(J)>& f, const RotatedRow (&x)[2], std::integer_sequence<int, J...>) {
  const int t = threadIdx.x % 4;
  ((f.at(0, J, 0) = feature_pair<Query, First + J, 0>(x[0], t), f.at(0, J, 1) = feature_pair<Query, First + J, 0>(x[1], t),
    f.at(0, J, 2) = feature_pair<Query, First + J, 1>(x[0], t), f.at(0, J, 3) = feature_pair<Query, First + J, 1>(x[1], t)),
   ...);
}

// f_q of this warp's 16 rows of the chunk: the readout's A operand, never in shared memory.
template <int Dv>
__device__ void query_features(typename Config<Dv>::query_features& fq, const QkTile& q) {
  RotatedRow x[2];
  load_rotated_rows(x, q, kQueryPrescale);
  feature_map<true, 0>(fq, x, std::make_integer_sequence<int, kSlices>());
}

// Slices First .. First + N - 1 of f_k of this warp's 16 rows into shared memory for the state
// update, a slice at a time (stmatrix), so that few registers are live beside f_q.
template <int First, int... J>
__device__ void store_key_slices(FeatureTile& fk, const RotatedRow (&x)[2], std::integer_sequence<int, J...>) {
  rt_bf<16, kFeatureDim> slice;
  const int row = warpgroup::warp_row();
  ((feature_map<false, First + J>(slice, x, std::make_integer_sequence<int, 1>()),
    warp::store(fk, slice, row, kFeatureDim * (First + J))),
   ...);
}

// Warpgroup w's share of f_k: slices w * key_slices on.
template <int Dv, int... W>
__device__ void store_key_features(FeatureTile& fk, const QkTile& k, int w, std::integer_sequence<int, W...>) {
  constexpr int share = Config<Dv>::key_slices;
  RotatedRow x[2];
  load_rotated_rows(x, k, 1.0f);
  if constexpr (sizeof...(W) == 1) {  // one warpgroup: no branch on its index around the stores
    store_key_slices<0>(fk, x, std::make_integer_sequence<int, share>());
  } else {
    ((w == W ? store_key_slices<W * share>(fk, x, std::make_integer_sequence<int, share>()) : void()), ...);
  }
}

// The denominator's state z = sum_j f_k(k_j), summed as the Gram matrix it is made of: z's
// quadratic features are the entries of K^T K and its linear ones those of K^T 1, so one warp adds
// the chunk's with four 16-key steps of mma.sync (K^T as the A operand is K as the B operand,
// register for register: tk/layout/rt_layout.hpp's row_l and col_l pairs) instead of summing the
// 64 stored rows of 160 features. Each lane adds the elements it holds of the fp32 sums.
__device__ void add_key_gram(Gram& gram, const QkTile& k) {
  using Keys = rt_bf<16, kFeatureDim, col_l>;  // 16 keys x 16 entries: K's B operand
  Keys ones;                                   // a B operand whose column 0 is 1: K^T 1
  warp::zero(ones);
  warp::fill_where(ones, 1.0f, [](int, int col) { return col == 0; });
  rt_fl<16, kFeatureDim> kk, k1;
  warp::zero(kk);
  warp::zero(k1);
#pragma unroll
  for (int step = 0; step < kRows / 16; ++step) {
    Keys keys;
    warp::load(keys, k, 16 * step, 0);
    rt_bf<16, kFeatureDim> keys_t;  // K^T's A operand
#pragma unroll
    for (int p = 0; p < layout::kPairsPerSubtile; ++p) keys_t.data[p] = keys.data[p];
    warp::mma_AB(kk, keys_t, keys, kk);
    warp::mma_AB(k1, keys_t, ones, k1);
  }
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int p = 0; p < layout::kPairsPerSubtile; ++p) {
    const float2 sums = kk.at(0, 0, p), column0 = k1.at(0, 0, p);
    const layout::Coord x = layout::rt_pair(lane, p, 0, layout::RtLayout::row);
    gram.kk[x.row][x.col] += sums.x;
    gram.kk[x.row][x.col + 1] += sums.y;
    if (x.col == 0) gram.k1[x.row] += column0.x;
  }
}

// z as features, bf16, into row 0 of the norm tile (the next readout's B): each lane writes the
// Gram elements it summed (add_key_gram), each pair once (feature_of), and lane 0 the constant
// feature's sum, the number of keys. Padding columns stay 0.
template <class NormTile>
__device__ void save_key_sums(NormTile& norm, const Gram& gram, int keys) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int p = 0; p < layout::kPairsPerSubtile; ++p)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const layout::Coord x = layout::rt_pair(lane, p, e, layout::RtLayout::row);
      if (const int f = feature_of(x.row, x.col); f >= 0) norm(0, f) = __float2bfloat16_rn(gram.kk[x.row][x.col]);
      if (x.col == 0 && e == 0) norm(0, feature_of(x.row, kOne)) = __float2bfloat16_rn(gram.k1[x.row]);
    }
  if (lane == 0) norm(0, kConstantFeature) = __float2bfloat16_rn(float(keys));
}

// A = phi(S / 4) = 1 + S/4 + S^2/32 (Horner), zero where the key lies in the row's future.
template <class Scores>
__device__ void phi_causal(Scores& a, const Scores& s) {
  warp::mul(a, s, 1.0f / 32);
  warp::add(a, a, 0.25f);
  warp::mul(a, a, s);
  warp::add(a, a, 1.0f);
  const int row0 = warpgroup::warp_row();
  warp::fill_where(a, 0.0f, [row0](int r, int c) { return c > row0 + r; });
}

// The state after this chunk, as the next chunk's readout operands (bf16): warpgroup w's rows of
// it, and z.
template <int Dv, bool Normalize>
__device__ void save_state(Smem<Dv>& sm, const typename Config<Dv>::state& state, int keys, int w) {
  typename Config<Dv>::state_bf state_bf;
  warp::copy(state_bf, state);
  warpgroup::store(sm.state[w], state_bf);
  if (Normalize && threadIdx.x < 32) save_key_sums(sm.norm, sm.gram, keys);
}

// This warp's 16 rows of chunk c, warpgroup w's columns, to O: the rows before the end of the sequence.
template <int Dv>
__device__ void store_output(const Problem& p, const typename Config<Dv>::out& o, int bh, int c, int w) {
  typename Config<Dv>::out_bf o_bf;
  warp::copy(o_bf, o);
  const int row0 = c * kRows + warpgroup::warp_row();
  warp::store(p.o + (std::size_t(bh) * p.seq + row0) * Dv + w * warpgroup::kRows, o_bf, Dv, p.seq - row0);
}

// Named barrier 1: the whole block (every warpgroup reads the features all of them build).
template <int Dv>
__device__ void sync_block() {
  warpgroup::sync(1, Config<Dv>::threads);
}

template <int Dv, bool Normalize>
__global__ void __launch_bounds__(Config<Dv>::threads, Config<Dv>::blocks_per_sm)
    forward_kernel(const __grid_constant__ Maps maps, const Problem p) {
  using C = Config<Dv>;
  extern __shared__ std::uint8_t raw[];
  Smem<Dv>& sm = aligned_smem<Smem<Dv>>(raw);
  const int bh = blockIdx.x, w = warpgroup::index();
  if (threadIdx.x == 0) sm.chunks.init(C::threads / 32);
  for (auto& tile : sm.state) clear(tile);  // the first chunk's readout: no earlier chunks
  clear(sm.norm);
  if (threadIdx.x == 0) sm.gram = Gram{};
  arch::fence_proxy_async();  // written by threads, read by wgmma
  __syncthreads();
  if (threadIdx.x == 0) load_chunk(sm, maps, bh, 0);

  typename C::state state;
  warp::zero(state);
  for (int c = 0; c < p.chunks; ++c) {
    if (threadIdx.x == 0 && c + 1 < p.chunks) load_chunk(sm, maps, bh, c + 1);
    const int stage = sm.chunks.stage(c);
    sm.chunks.wait_full(c);

    // The chunk's scores, and the readout of the state of the chunks before it.
    typename C::query_features fq;
    query_features<Dv>(fq, sm.q[stage]);
    typename C::scores s;
    typename C::out o;
    typename C::norm n;
    warpgroup::mma_fence(fq);  // f_q built before the fence (C7520 otherwise)
    warpgroup::mma_ABt(s, sm.q[stage], sm.k[stage], false);
    warpgroup::mma_ABt(o, fq, sm.state[w], false);
    if constexpr (Normalize) warpgroup::mma_ABt(n, fq, sm.norm, false);
    warpgroup::mma_commit();

    // While the tensor cores run: f_k, the state update's B.
    store_key_features<Dv>(sm.fk, sm.k[stage], w, std::make_integer_sequence<int, C::consumers>());
    arch::fence_proxy_async();  // written by threads, read by wgmma
    sync_block<Dv>();
    warpgroup::mma_wait<0>();

    typename C::scores a;
    phi_causal(a, s);
    typename C::probs a_bf;
    warp::copy(a_bf, a);
    warpgroup::mma_fence();
    warpgroup::mma_AB(o, a_bf, sm.v[stage][w]);
    warpgroup::mma_AtB(state, sm.v[stage][w], sm.fk);
    warpgroup::mma_commit();
    typename C::rows den;
    if constexpr (Normalize) {  // while the tensor cores run: A's rows in fp32, before rounding, and z
      warp::row_sum(den, n);
      warp::row_sum(den, a, den);
      if (threadIdx.x < 32) add_key_gram(sm.gram, sm.k[stage]);
    }
    warpgroup::mma_wait<0>();
    if (threadIdx.x % 32 == 0) sm.chunks.release(c);
    if constexpr (Normalize) {  // one division per row, not per element (ncu: the 32 IEEE divisions a
      typename C::rows inv_den;  // thread, FCHK and its slow path each, held ~11% of the stall samples)
      warp::fill(inv_den, 1.0f);
      warp::div(inv_den, inv_den, den);
      warp::mul_row(o, o, inv_den);
    }
    store_output<Dv>(p, o, bh, c, w);
    if constexpr (C::consumers > 1) sync_block<Dv>();  // every warpgroup's readout of the shared z is over
    save_state<Dv, Normalize>(sm, state, (c + 1) * kRows, w);
    arch::fence_proxy_async();  // the saved state, written by threads, read by the next readout
    sync_block<Dv>();           // and every read of f_k is over before the next chunk's
  }
}

}  // namespace based::hopper
