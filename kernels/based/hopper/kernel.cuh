#pragma once
// The Hopper Based forward (based.hpp), in the DSL: the chunked causal recurrence. One block per
// (batch, head), one warpgroup per 64 value columns, walking the sequence in chunks of 64 rows;
// per chunk c
//
//   intra-chunk  S = Q K^T, A = phi(S / 4) masked causal, O = A V        (wgmma, A from registers)
//   inter-chunk  O += f_q(Q) State                                       (wgmma)
//                State += f_k(K)^T V    after the readout: chunks < c only (wgmma)
//   normalized   O /= rowsum(A) + f_q(Q) z,   z += colsum f_k(K)
//
// with the 160 folded features of config.cuh. The state (fp32, in registers, transposed: value
// dim x features) goes to shared memory as bf16 after each chunk, as the next readout's B
// operand; z stays fp32 in the threads that sum its columns. The TMA zero-fills rows of Q, K, V
// past the sequence. They lie in the last chunk, so its update of the state (which they would
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

// Row r of a chunk's Q or K as floats: two 16-byte reads (a row is one 32-byte swizzle span).
__device__ void load_row(float (&x)[kFeatureDim], const QkTile& t, int r) {
#pragma unroll
  for (int h = 0; h < kFeatureDim / 8; ++h) {
    const uint4 u = *reinterpret_cast<const uint4*>(t.data + QkTile::offset(r, 8 * h));
    const auto* pairs = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(pairs[i]);
      x[8 * h + 2 * i] = f.x;
      x[8 * h + 2 * i + 1] = f.y;
    }
  }
}

// Entry A of the augmented vector (the row's 16 entries, then 1).
template <int A>
__device__ float entry(const float (&x)[kFeatureDim]) {
  if constexpr (A == kOne)
    return 1.0f;
  else
    return x[A];
}

// Features F and F + 1 of row r: f_q of the query, f_k of the key (zero in the padding), each pair
// one 4-byte store.
template <int F>
__device__ void store_feature_pair(FeatureTile& fq, FeatureTile& fk, int r, const float (&q)[kFeatureDim],
                                   const float (&k)[kFeatureDim]) {
  constexpr Feature x = feature(F), y = feature(F + 1);
  const float qx = x.q_scale * entry<x.a>(q) * entry<x.b>(q), qy = y.q_scale * entry<y.a>(q) * entry<y.b>(q);
  const float kx = F < kFeatureTerms ? entry<x.a>(k) * entry<x.b>(k) : 0.0f;
  const float ky = F + 1 < kFeatureTerms ? entry<y.a>(k) * entry<y.b>(k) : 0.0f;
  *reinterpret_cast<__nv_bfloat162*>(fq.data + FeatureTile::offset(r, F)) = __floats2bfloat162_rn(qx, qy);
  *reinterpret_cast<__nv_bfloat162*>(fk.data + FeatureTile::offset(r, F)) = __floats2bfloat162_rn(kx, ky);
}

// Part P of the features (kFeatures / Parts of them, from P kFeatures / Parts) of row r.
template <int Parts, int P, int... J>
__device__ void store_features(FeatureTile& fq, FeatureTile& fk, int r, const float (&q)[kFeatureDim],
                               const float (&k)[kFeatureDim], std::integer_sequence<int, J...>) {
  (store_feature_pair<P*(kFeatures / Parts) + 2 * J>(fq, fk, r, q, k), ...);
}

// f_q and f_k of the chunk in stage `stage`: thread t builds row t % 64, the features of part t / 64
// (warp-uniform: two warps a part), each feature's pair of entries and constant fixed at compile
// time. Rows past the sequence (zeros) get features too: they lie in the last chunk only, whose
// keys no later readout reads.
template <int Dv, int... P>
__device__ void build_features(Smem<Dv>& sm, int stage, std::integer_sequence<int, P...>) {
  constexpr int parts = sizeof...(P);
  static_assert(Config<Dv>::threads == parts * kRows && kFeatures % (2 * parts) == 0, "a row a thread, whole pairs");
  const int r = threadIdx.x % kRows, part = threadIdx.x / kRows;
  float q[kFeatureDim], k[kFeatureDim];
  load_row(q, sm.q[stage], r);
  load_row(k, sm.k[stage], r);
  constexpr auto pairs = std::make_integer_sequence<int, kFeatures / parts / 2>();
  ((part == P ? store_features<parts, P>(sm.fq, sm.fk, r, q, k, pairs) : void()), ...);
}

// The denominator's state: z += the column sums of f_k (as rounded for the tensor cores, so the
// numerator and denominator see the same features). Thread t < 80 owns columns 2t and 2t + 1.
constexpr int kZOwners = kFeatures / 2;
__device__ void add_key_features(float2& z, const FeatureTile& fk) {
  if (int(threadIdx.x) >= kZOwners) return;
  const int f = 2 * threadIdx.x;
  for (int r = 0; r < kRows; ++r) {
    const float2 x = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(fk.data + FeatureTile::offset(r, f)));
    z.x += x.x;
    z.y += x.y;
  }
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
__device__ void save_state(Smem<Dv>& sm, const typename Config<Dv>::state& state, float2 z, int w) {
  typename Config<Dv>::state_bf state_bf;
  warp::copy(state_bf, state);
  warpgroup::store(sm.state[w], state_bf);
  if (Normalize && int(threadIdx.x) < kZOwners) {
    *reinterpret_cast<__nv_bfloat162*>(sm.norm.data + Config<Dv>::norm_t::offset(0, 2 * threadIdx.x)) =
        __float22bfloat162_rn(z);
  }
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
  Smem<Dv>& sm = *reinterpret_cast<Smem<Dv>*>(raw + (kSmemAlign - arch::shared_address(raw) % kSmemAlign) % kSmemAlign);
  const int bh = blockIdx.x, w = warpgroup::index();
  if (threadIdx.x == 0) sm.chunks.init(C::threads / 32);
  for (auto& tile : sm.state) clear(tile);  // the first chunk's readout: no earlier chunks
  clear(sm.norm);
  __syncthreads();
  if (threadIdx.x == 0) load_chunk(sm, maps, bh, 0);

  typename C::state state;
  warp::zero(state);
  float2 z = {0.0f, 0.0f};  // the denominator's state: columns 2t, 2t + 1 (add_key_features)
  for (int c = 0; c < p.chunks; ++c) {
    if (threadIdx.x == 0 && c + 1 < p.chunks) load_chunk(sm, maps, bh, c + 1);
    const int stage = sm.chunks.stage(c);
    sm.chunks.wait_full(c);
    build_features(sm, stage, std::make_integer_sequence<int, C::threads / kRows>());
    arch::fence_proxy_async();  // the features and the saved state, written by threads, read by wgmma
    sync_block<Dv>();

    typename C::scores s;
    typename C::out o;
    typename C::norm n;
    warpgroup::mma_fence();
    warpgroup::mma_ABt(s, sm.q[stage], sm.k[stage], false);
    warpgroup::mma_ABt(o, sm.fq, sm.state[w], false);
    if constexpr (Normalize) warpgroup::mma_ABt(n, sm.fq, sm.norm, false);
    warpgroup::mma_commit();
    if constexpr (Normalize) add_key_features(z, sm.fk);  // while the tensor cores run
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
    if constexpr (Normalize) {  // while the tensor cores run: A's rows in fp32, before rounding
      warp::row_sum(den, n);
      warp::row_sum(den, a, den);
    }
    warpgroup::mma_wait<0>();
    if (threadIdx.x % 32 == 0) sm.chunks.release(c);
    if constexpr (Normalize) warp::div_row(o, o, den);
    store_output<Dv>(p, o, bh, c, w);
    sync_block<Dv>();  // every warp's readout of the saved state and reads of the features are over
    save_state<Dv, Normalize>(sm, state, z, w);
  }
}

}  // namespace based::hopper
