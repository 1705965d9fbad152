#pragma once
// The Hopper Based forward's sizes and shared memory (the kernel is in kernel.cuh, its launcher in
// ../based_hopper.cu, its feature map in ../feature_map.hpp).
#include <cstdint>

#include "kernels/based/based.hpp"
#include "kernels/based/feature_map.hpp"
#include "tk/warpgroup.cuh"

namespace based::hopper {

using namespace tk;
using bf16 = __nv_bfloat16;

constexpr int kRows = warpgroup::kRows;  // a chunk: the 64 rows of one warpgroup's accumulator
static_assert(kRows == kChunk, "based.hpp's FLOP count assumes the kernel's chunk");

// The tiles every value dim shares: a chunk's queries or keys, and f_k of its rows (the state
// update's B); f_q lives in registers only, as the readout's A.
using QkTile = st<bf16, kRows, kFeatureDim>;
using FeatureTile = st<bf16, kRows, kFeatures>;

// Per value dim: one warpgroup per 64 value columns (the state's transpose, value columns x
// features, is one warpgroup's 64-row accumulator each). They share the chunk's Q, K and features
// and each keeps its own columns of V, O and the state.
template <int Dv>
struct Config {
  static constexpr int value_dim = Dv;
  static constexpr int consumers = Dv / warpgroup::kRows;
  static constexpr int threads = consumers * 128;
  static constexpr int stages = 2;  // chunk c + 1's Q, K, V land while chunk c runs
  // Shared memory (below) and registers (ptxas: 247 a thread at Dv = 64 normalized, 245 at 128):
  // two blocks an SM at Dv = 64, one at 128.
  static constexpr int blocks_per_sm = consumers == 1 ? 2 : 1;

  using qk = QkTile;
  using v = st<bf16, kRows, warpgroup::kRows>;  // a warpgroup's 64 columns of a chunk's values
  using features = FeatureTile;
  using query_features = rt_bf<16, kFeatures>;  // each warp's 16 rows of f_q: the readout's A
  using key_slice = rt_bf<16, kFeatureDim>;     // 16 rows, one slice of f_k, on its way to shared memory
  static_assert(kSlices % consumers == 0, "the warpgroups share the key features' slices evenly");
  static constexpr int key_slices = kSlices / consumers;  // slices of f_k each warpgroup builds
  // A warpgroup's 64 rows of the state (sum_j f_k(k_j) v_j^T)^T, bf16: the readout's B.
  using state_t = st<bf16, warpgroup::kRows, kFeatures>;
  using norm_t = st<bf16, 16, kFeatures>;   // row 0: sum_j f_k(k_j), the denominator's state
  using scores = rt_fl<16, kRows>;          // each warp's 16 rows of S, then of phi(S)
  using probs = rt_bf<16, kRows>;           // and of phi(S) as the A operand of phi(S) V
  using out = rt_fl<16, warpgroup::kRows>;  // each warp's 16 rows of its warpgroup's O columns
  using out_bf = rt_bf<16, warpgroup::kRows>;
  // The state transposed (M = 64 value columns: one warpgroup's accumulator), so that its update
  // f_k^T V is one wgmma chain with V as the transposed A and f_k as B.
  using state = rt_fl<16, kFeatures>;
  using state_bf = rt_bf<16, kFeatures>;
  using norm = rt_fl<16, 16>;  // f_q . (the denominator's state): column 0, the rest zero
  using rows = scores::row_vec;
};

// The denominator's state z (the sum of f_k over the keys so far) in the form it is summed in:
// sum_j k_j k_j^T and sum_j k_j, fp32 (kernel.cuh's add_key_gram); feature_of() reads z from it.
struct Gram {
  float kk[kFeatureDim][kFeatureDim];
  float k1[kFeatureDim];
};

template <int Dv>
struct Smem {
  using C = Config<Dv>;
  typename C::qk q[C::stages], k[C::stages];
  typename C::v v[C::stages][C::consumers];
  typename C::features fk;
  typename C::state_t state[C::consumers];
  typename C::norm_t norm;
  Gram gram;
  pipeline<C::stages> chunks;
};
template <int Dv>
constexpr int kSmemBytes = sizeof(Smem<Dv>) + kSmemAlign;  // room to align the tiles
static_assert(2 * kSmemBytes<64> <= 228 * 1024, "two blocks must fit on an SM at Dv = 64");
static_assert(kSmemBytes<128> <= kMaxSmemBytes, "one block must fit at Dv = 128");

struct Maps {
  CUtensorMap q, k, v;
};

struct Problem {
  int seq, chunks;  // chunks of 64 rows, the last possibly partial
  bf16* o;
};

}  // namespace based::hopper
