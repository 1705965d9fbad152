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
// operand; z stays fp32 in the threads that build its features. The TMA zero-fills rows of Q, K, V
// past the sequence; their keys' features are zeroed so they add nothing to the state, their
// scores lie in the causal mask of every real row, and their output rows are never stored.
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

// Entry a of row r of the augmented vector (the row's 16 entries, then 1).
__device__ float entry(const C::qk& t, int r, int a) { return a == kOne ? 1.0f : __bfloat162float(t(r, a)); }

// Thread t builds features t and t + 128 (those below 160) of every row of f_q and f_k, and adds
// its f_k columns to z. Keys at and past row `valid` (past the sequence) get no features.
template <bool Normalize>
__device__ void build_features(Smem& sm, int stage, int valid, float (&z)[2]) {
  const C::qk &q = sm.q[stage], &k = sm.k[stage];
#pragma unroll
  for (int n = 0; n < 2; ++n) {
    const int f = warpgroup::thread() + n * C::threads;
    if (f >= kFeatures) break;
    const Feature x = feature(f);
    const bool real = f < kFeatureTerms;
    for (int r = 0; r < kRows; ++r) {
      const float fk = real && r < valid ? entry(k, r, x.a) * entry(k, r, x.b) : 0.0f;
      sm.fq(r, f) = __float2bfloat16(x.q_scale * entry(q, r, x.a) * entry(q, r, x.b));
      sm.fk(r, f) = __float2bfloat16(fk);
      if constexpr (Normalize) z[n] += fk;
    }
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
__device__ void save_state(Smem& sm, const C::state& state, const float (&z)[2]) {
  C::state_bf state_bf;
  warp::copy(state_bf, state);
  warpgroup::store(sm.state, state_bf);
  if constexpr (Normalize) {
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      const int f = warpgroup::thread() + n * C::threads;
      if (f < kFeatures) sm.norm(0, f) = __float2bfloat16(z[n]);
    }
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
  float z[2] = {0.0f, 0.0f};
  for (int c = 0; c < p.chunks; ++c) {
    if (threadIdx.x == 0 && c + 1 < p.chunks) load_chunk(sm, maps, bh, c + 1);
    const int stage = sm.chunks.stage(c);
    sm.chunks.wait_full(c);
    build_features<Normalize>(sm, stage, p.seq - c * kRows, z);
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
