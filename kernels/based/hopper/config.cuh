#pragma once
// The Hopper Based forward's sizes, feature map and shared memory (the kernel is in kernel.cuh,
// its launcher in ../based_hopper.cu).
//
// The features. With x = q.k / 4,
//   phi(x) = 1 + x + x^2/2 = 1 + sum_a (q_a/4) k_a + sum_a (q_a^2/32) k_a^2 + sum_{a<b} (q_a q_b/16) (k_a k_b)
// (x^2 = sum_{a,b} q_a q_b k_a k_b / 16, the pairs a != b twice). So phi(q.k / 4) = f_q(q) . f_k(k)
// with 1 + 16 + 16 + 120 = 153 features (the 256 ordered pairs folded to 136 by symmetry), padded
// with zeros to 160. Every feature is a product of two entries of the augmented vector
// (x_0, ..., x_15, 1) times a constant on the query side: (16, 16) the constant 1, (a, 16) the linear
// terms, (a, a) the squares, (a, b) the cross terms.
#include <cstdint>

#include "kernels/based/based.hpp"
#include "tk/warpgroup.cuh"

namespace based::hopper {

using namespace tk;
using bf16 = __nv_bfloat16;

constexpr int kRows = warpgroup::kRows;  // a chunk: the 64 rows of one warpgroup's accumulator
static_assert(kRows == kChunk, "based.hpp's FLOP count assumes the kernel's chunk");
constexpr int kOne = kFeatureDim;        // the augmented vector's constant entry
constexpr int kCrossTerms = kFeatureDim * (kFeatureDim - 1) / 2;
constexpr int kFeatureTerms = 1 + 2 * kFeatureDim + kCrossTerms;  // 153
constexpr int kFeatures = (kFeatureTerms + 15) / 16 * 16;          // 160: a multiple of the tiles' 16

// Feature f as the product x_a x_b of the augmented vector, and its query-side constant.
struct Feature {
  int a, b;
  float q_scale;
};
__host__ __device__ constexpr Feature feature(int f) {
  if (f == 0) return {kOne, kOne, 1.0f};
  if (f <= kFeatureDim) return {f - 1, kOne, 0.25f};                        // x / 4
  if (f <= 2 * kFeatureDim) return {f - 1 - kFeatureDim, f - 1 - kFeatureDim, 1.0f / 32};  // x^2 / 2
  if (f >= kFeatureTerms) return {kOne, kOne, 0.0f};                        // padding
  int p = f - 1 - 2 * kFeatureDim, a = 0;
  while (p >= kFeatureDim - 1 - a) p -= kFeatureDim - 1 - a++;
  return {a, a + 1 + p, 1.0f / 16};  // the pair (a, b) twice in x^2 / 2
}
static_assert(feature(kFeatureTerms - 1).a == kFeatureDim - 2 && feature(kFeatureTerms - 1).b == kFeatureDim - 1,
              "the last cross term is (14, 15)");

struct Config {
  static constexpr int threads = 128;  // one warpgroup: the recurrence is sequential in the chunks
  static constexpr int value_dim = kValueDim;
  static constexpr int stages = 2;     // chunk c + 1's Q, K, V land while chunk c runs

  using qk = st<bf16, kRows, kFeatureDim>;         // a chunk's queries or keys
  using v = st<bf16, kRows, value_dim>;            // a chunk's values
  using features = st<bf16, kRows, kFeatures>;     // f_q or f_k of a chunk's rows
  using state_t = st<bf16, value_dim, kFeatures>;  // the state (sum_j f_k(k_j) v_j^T)^T: the readout's B
  using norm_t = st<bf16, 16, kFeatures>;          // row 0: sum_j f_k(k_j), the denominator's state
  using scores = rt_fl<16, kRows>;                 // each warp's 16 rows of S, then of phi(S)
  using probs = rt_bf<16, kRows>;                  // and of phi(S) as the A operand of phi(S) V
  using out = rt_fl<16, value_dim>;                // each warp's 16 rows of O
  using out_bf = rt_bf<16, value_dim>;
  // The state transposed (value_dim x features, M = value_dim = 64: one warpgroup's accumulator),
  // so that its update f_k^T V is one wgmma chain with V as the transposed A and f_k as B.
  using state = rt_fl<16, kFeatures>;
  using state_bf = rt_bf<16, kFeatures>;
  using norm = rt_fl<16, 16>;  // f_q . (the denominator's state): column 0, the rest zero
  using rows = scores::row_vec;
};
static_assert(Config::value_dim == warpgroup::kRows, "the state's transpose is one warpgroup's 64 rows");

struct Smem {
  Config::qk q[Config::stages], k[Config::stages];
  Config::v v[Config::stages];
  Config::features fq, fk;
  Config::state_t state;
  Config::norm_t norm;
  pipeline<Config::stages> chunks;
};
constexpr int kSmemBytes = sizeof(Smem) + kSmemAlign;  // room to align the tiles
static_assert(2 * kSmemBytes <= 228 * 1024, "two blocks must fit on an SM");

struct Maps {
  CUtensorMap q, k, v;
};

struct Problem {
  int seq, chunks;  // chunks of 64 rows, the last possibly partial
  bf16* o;
};

}  // namespace based::hopper
