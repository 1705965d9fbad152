#pragma once
// The Hopper Based forward (based.hpp), in the DSL: the chunked causal recurrence. One block per
// (batch, head), one warpgroup, walking the sequence in chunks of 64 rows; per chunk c
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

using C = Config;

// Thread 0: chunk c's Q, K and V into its stage, once its previous use is released.
__device__ void load_chunk(Smem& sm, const Maps& maps, int bh, int c) {
  const int s = sm.chunks.stage(c);
  const std::uint32_t bar = sm.chunks.acquire(c, 2 * tma::bytes<C::qk>() + tma::bytes<C::v>());
  tma::load_async(sm.q[s], maps.q, c, 0, bar, bh);
  tma::load_async(sm.k[s], maps.k, c, 0, bar, bh);
  tma::load_async(sm.v[s], maps.v, c, 0, bar, bh);
}

template <class ST>
__device__ void clear(ST& t) {
  for (int i = warpgroup::thread(); i < ST::bytes / 16; i += C::threads) reinterpret_cast<uint4*>(t.data)[i] = uint4{};
}

// Row r of a chunk's Q or K as floats: two 16-byte reads (a row is one 32-byte swizzle span).
__device__ void load_row(float (&x)[kFeatureDim], const C::qk& t, int r) {
#pragma unroll
  for (int h = 0; h < kFeatureDim / 8; ++h) {
    const uint4 u = *reinterpret_cast<const uint4*>(t.data + C::qk::offset(r, 8 * h));
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
  if constexpr (A == kOne) return 1.0f;
  else return x[A];
}

// Features F and F + 1 of row r: f_q of the query, f_k of the key (zero in the padding), each pair
// one 4-byte store.
template <int F>
__device__ void store_feature_pair(Smem& sm, int r, const float (&q)[kFeatureDim], const float (&k)[kFeatureDim]) {
  constexpr Feature x = feature(F), y = feature(F + 1);
  const float qx = x.q_scale * entry<x.a>(q) * entry<x.b>(q), qy = y.q_scale * entry<y.a>(q) * entry<y.b>(q);
  const float kx = F < kFeatureTerms ? entry<x.a>(k) * entry<x.b>(k) : 0.0f;
  const float ky = F + 1 < kFeatureTerms ? entry<y.a>(k) * entry<y.b>(k) : 0.0f;
  *reinterpret_cast<__nv_bfloat162*>(sm.fq.data + C::features::offset(r, F)) = __floats2bfloat162_rn(qx, qy);
  *reinterpret_cast<__nv_bfloat162*>(sm.fk.data + C::features::offset(r, F)) = __floats2bfloat162_rn(kx, ky);
}

template <int F0, int... J>
__device__ void store_features(Smem& sm, int r, const float (&q)[kFeatureDim], const float (&k)[kFeatureDim],
                               std::integer_sequence<int, J...>) {
  (store_feature_pair<F0 + 2 * J>(sm, r, q, k), ...);
}

// f_q and f_k of the chunk in stage `stage`: thread t builds row t % 64, warps 0-1 its first half of
// the features, warps 2-3 the second, each feature's pair of entries and constant fixed at compile
// time. Rows past the sequence (zeros) get features too: they lie in the last chunk only, whose
// keys no later readout reads.
constexpr int kHalfFeatures = kFeatures / 2;
static_assert(kHalfFeatures % 2 == 0 && C::threads == 2 * kRows, "two threads a row, whole pairs each");
__device__ void build_features(Smem& sm, int stage) {
  const int r = warpgroup::thread() % kRows;
  float q[kFeatureDim], k[kFeatureDim];
  load_row(q, sm.q[stage], r);
  load_row(k, sm.k[stage], r);
  constexpr auto pairs = std::make_integer_sequence<int, kHalfFeatures / 2>();
  if (warpgroup::thread() < kRows) {
    store_features<0>(sm, r, q, k, pairs);
  } else {
    store_features<kHalfFeatures>(sm, r, q, k, pairs);
  }
}

// The denominator's state: z += the column sums of f_k (as rounded for the tensor cores, so the
// numerator and denominator see the same features). Thread t < 80 owns columns 2t and 2t + 1.
constexpr int kZOwners = kFeatures / 2;
__device__ void add_key_features(float2& z, const Smem& sm) {
  if (warpgroup::thread() >= kZOwners) return;
  const int f = 2 * warpgroup::thread();
  for (int r = 0; r < kRows; ++r) {
    const float2 x = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(sm.fk.data + C::features::offset(r, f)));
    z.x += x.x;
    z.y += x.y;
  }
}

// A = phi(S / 4) = 1 + S/4 + S^2/32 (Horner), zero where the key lies in the row's future.
__device__ void phi_causal(C::scores& a, const C::scores& s) {
  warp::mul(a, s, 1.0f / 32);
  warp::add(a, a, 0.25f);
  warp::mul(a, a, s);
  warp::add(a, a, 1.0f);
  const int row0 = warpgroup::warp_row();
  warp::fill_where(a, 0.0f, [row0](int r, int c) { return c > row0 + r; });
}

// The state after this chunk, as the next chunk's readout operands (bf16).
template <bool Normalize>
__device__ void save_state(Smem& sm, const C::state& state, float2 z) {
  C::state_bf state_bf;
  warp::copy(state_bf, state);
  warpgroup::store(sm.state, state_bf);
  if (Normalize && warpgroup::thread() < kZOwners) {
    *reinterpret_cast<__nv_bfloat162*>(sm.norm.data + C::norm_t::offset(0, 2 * warpgroup::thread())) =
        __float22bfloat162_rn(z);
  }
}

// This warp's 16 rows of chunk c to O, those before the end of the sequence.
__device__ void store_output(const Problem& p, const C::out& o, int bh, int c) {
  C::out_bf o_bf;
  warp::copy(o_bf, o);
  const int row0 = c * kRows + warpgroup::warp_row();
  warp::store(p.o + (std::size_t(bh) * p.seq + row0) * C::value_dim, o_bf, C::value_dim, p.seq - row0);
}

template <bool Normalize>
__global__ void __launch_bounds__(Config::threads, 2) forward_kernel(const __grid_constant__ Maps maps, const Problem p) {
  extern __shared__ std::uint8_t raw[];
  Smem& sm = *reinterpret_cast<Smem*>(raw + (kSmemAlign - arch::shared_address(raw) % kSmemAlign) % kSmemAlign);
  const int bh = blockIdx.x;
  if (threadIdx.x == 0) sm.chunks.init(C::threads / 32);
  clear(sm.state);  // the first chunk's readout: no earlier chunks
  clear(sm.norm);
  __syncthreads();
  if (threadIdx.x == 0) load_chunk(sm, maps, bh, 0);

  C::state state;
  warp::zero(state);
  float2 z = {0.0f, 0.0f};  // the denominator's state: columns 2t, 2t + 1 (add_key_features)
  for (int c = 0; c < p.chunks; ++c) {
    if (threadIdx.x == 0 && c + 1 < p.chunks) load_chunk(sm, maps, bh, c + 1);
    const int stage = sm.chunks.stage(c);
    sm.chunks.wait_full(c);
    build_features(sm, stage);
    arch::fence_proxy_async();  // the features and the saved state, written by threads, read by wgmma
    warpgroup::sync(1);

    C::scores s;
    C::out o;
    C::norm n;
    warpgroup::mma_fence();
    warpgroup::mma_ABt(s, sm.q[stage], sm.k[stage], false);
    warpgroup::mma_ABt(o, sm.fq, sm.state, false);
    if constexpr (Normalize) warpgroup::mma_ABt(n, sm.fq, sm.norm, false);
    warpgroup::mma_commit();
    if constexpr (Normalize) add_key_features(z, sm);  // while the tensor cores run
    warpgroup::mma_wait<0>();

    C::scores a;
    phi_causal(a, s);
    C::probs a_bf;
    warp::copy(a_bf, a);
    warpgroup::mma_fence();
    warpgroup::mma_AB(o, a_bf, sm.v[stage]);
    warpgroup::mma_AtB(state, sm.v[stage], sm.fk);
    warpgroup::mma_commit();
    C::rows den;
    if constexpr (Normalize) {  // while the tensor cores run: A's rows in fp32, before rounding
      warp::row_sum(den, n);
      warp::row_sum(den, a, den);
    }
    warpgroup::mma_wait<0>();
    if (threadIdx.x % 32 == 0) sm.chunks.release(c);
    if constexpr (Normalize) warp::div_row(o, o, den);
    store_output(p, o, bh, c);
    warpgroup::sync(1);  // every warp's readout of the saved state is over
    save_state<Normalize>(sm, state, z);
  }
}

}  // namespace based::hopper
