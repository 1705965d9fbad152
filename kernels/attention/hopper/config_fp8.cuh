#pragma once
// The e4m3 forward's config (D = 128): the bf16 kernel (kernel.cuh) on e4m3 tiles. What differs
// from Config<128> (config.cuh):
//
// - Q, K and V are e4m3, so a 128-wide row is 128 bytes (128B swizzle) and S = Q K^T is four
//   wgmma of K = 32 (m64n128k32.f32.e4m3.e4m3, the PTX ISA's only K for 8-bit inputs).
// - wgmma reads 8-bit operands K-major only (the transpose immediates are for .f16/.bf16), so in
//   O += P V the B operand V must hold its K index, the key, contiguous: V^T, D x N, each key row
//   of 32 stored in the order layout::p8_key gives (transpose_v.cuh makes it, before the forward).
// - P goes from S's fp32 accumulators straight into e4m3 A registers (warp::copy_e4m3) in the
//   same thread, at scale kProbScale; O += P V^T^T is mma_ABt with A from registers.
// - O leaves as bf16 times o_scale = v_scale / kProbScale; the softmax scale holds q_scale k_scale.
//
// Tiles are half the bf16 ones, so K and V get 4 stages each: 2 x 2 Q slots of 8 KB, 2 O tiles of
// 16 KB (bf16), 4 + 4 tiles of 16 KB: 192 KB.
#include <cuda_fp8.h>

#include "kernels/attention/hopper/config.cuh"

namespace attention::hopper {

using e4m3 = __nv_fp8_e4m3;

// P = 2^(s - m) lies in [0, 1]; e4m3's normal range starts at 2^-6 and its subnormals stop at
// 2^-9, where a softmax over N(0, 1) scores puts most of a long row (exp(-3.5) ~ 2^-5). Scaled by
// 2^8, P's normals reach down to 2^-14 and its largest value (256) is exact; the power of two
// makes the scaling itself exact, and 256 x 1 stays far from the 448 that saturates.
constexpr float kProbScale = 256.0f;

struct Fp8Config {
  static constexpr int head_dim = 128;
  static constexpr int consumers = 2;
  static constexpr int consumer_registers = 240;
  static constexpr int producer_registers = 24;
  static constexpr int threads = (1 + consumers) * 128;
  static constexpr int block_q = consumers * warpgroup::kRows;

  using q = st<e4m3, warpgroup::kRows, head_dim>;      // one consumer's queries
  using o_tile = st<bf16, warpgroup::kRows, head_dim>;  // its output on the way out (bf16)
  using kv = st<e4m3, kBlockKV, head_dim>;             // a tile of keys
  using v_tile = st<e4m3, head_dim, kBlockKV>;         // V^T: D rows of 128 keys (K-major B of P V)
  static constexpr bool v_transposed = true;
  static constexpr bool shifted = false;  // as many keys as queries (attention::refusal)
  static constexpr bool varlen = false;   // one batch of equal sequences
  using maps = Maps;
  using scores = rt_fl<16, kBlockKV>;
  using probs = rt_e4m3<kBlockKV>;  // each warp's 16 rows of P, keys permuted per 32
  using out = rt_fl<16, head_dim>;
  using out_bf = rt_bf<16, head_dim>;
  using rows = scores::row_vec;
  static constexpr int k_stages = 4, v_stages = 4, q_slots = 2, block_kv = kBlockKV;
  static constexpr bool o_in_q = false;
  __device__ static bool causal_chunks(int) { return true; }  // measured so (the snake is not, on e4m3)

  __device__ static void to_probs(probs& pr, const scores& s) { warp::copy_e4m3(pr, s, kProbScale); }
  __device__ static void mma_pv(out& o, const probs& pr, const v_tile& v) { warpgroup::mma_ABt(o, pr, v); }
  static constexpr bool scaled_output = true;  // O leaves as O o_scale / l
};
static_assert(kSmemBytes<Fp8Config> <= kMaxSmemBytes, "the stages must fit");

}  // namespace attention::hopper
