#pragma once
// The Based feature map of the Hopper kernel (hopper/kernel.cuh builds it, the host tests check
// it), as plain constexpr C++.
//
// The features. With x = q.k / 4,
//   phi(x) = 1 + x + x^2/2 = 1 + sum_a (q_a/4) k_a + sum_a (q_a^2/32) k_a^2 + sum_{a<b} (q_a q_b/16) (k_a k_b)
// (x^2 = sum_{a,b} q_a q_b k_a k_b / 16, the pairs a != b twice). So phi(q.k / 4) = f_q(q) . f_k(k)
// with 1 + 16 + 16 + 120 = 153 features (the 256 ordered pairs folded to 136 by symmetry), padded
// to 160: ten slices of 16 columns, each the row times a rotation of itself,
//   slice 0       column c: x_c (the linear terms; q/4 on the query side)
//   slice 1 + d   column c: x_c x_{c+d mod 16}, d = 0..7 (d = 0 the squares, q/32; the rest each
//                 unordered pair at distance d once, q/16)
//   slice 9       column c < 8: x_c x_{c+8} (the 8 pairs at distance 8, q/16); column 8: the
//                 constant 1; columns 9..15: padding (0)
// The map is the same along a slice: column c takes entries c and c + offset, which is what lets a
// lane build its columns of a register tile from the row rotated by its own first column
// (hopper/kernel.cuh), every index fixed at compile time.
#include "kernels/based/based.hpp"

namespace based {

constexpr int kSlices = 10;
constexpr int kFeatures = kSlices * kFeatureDim;  // 160
static_assert(kFeatureDim == 16, "the slices cover the pairs of 16 entries");

// Half a slice (8 columns, as a lane holds them: columns 2t, 2t + 1 of one half): what its
// columns are and the query side's constant (the key side's is 1).
enum class Term { linear, product, constant_first };  // constant_first: column 0 is 1, the rest padding
struct HalfSlice {
  Term term;
  int offset;  // product: column c is x_c x_{c + offset mod 16}
  float q_scale;
};
constexpr HalfSlice half_slice(int slice, int half) {
  if (slice == 0) return {Term::linear, 0, 0.25f};
  if (slice <= 8) return {Term::product, slice - 1, slice == 1 ? 1.0f / 32 : 1.0f / 16};
  return half == 0 ? HalfSlice{Term::product, 8, 1.0f / 16} : HalfSlice{Term::constant_first, 0, 1.0f};
}

// Feature f as the product x_a x_b of the augmented vector (x_0, ..., x_15, 1) and its query-side
// constant (0 for padding); the host tests check these terms sum to phi.
struct Feature {
  int a, b;
  float q_scale;
};
inline constexpr int kOne = kFeatureDim;  // the augmented vector's constant entry
constexpr Feature feature(int f) {
  const int slice = f / kFeatureDim, c = f % kFeatureDim, in_half = c % 8;
  const HalfSlice h = half_slice(slice, c / 8);
  switch (h.term) {
    case Term::linear: return {c, kOne, h.q_scale};
    case Term::product: return {c, (c + h.offset) % kFeatureDim, h.q_scale};
    default: return in_half == 0 ? Feature{kOne, kOne, h.q_scale} : Feature{kOne, kOne, 0.0f};
  }
}

// The feature holding the product x_a x_b (a, b: entries 0..15, or kOne for the constant), or -1
// where the pair is held the other way round, as (b, a): the inverse of feature(), for the
// kernel's denominator state, which arrives as the Gram matrix sum_j k_j k_j^T (each pair twice).
inline constexpr int kConstantFeature = (kSlices - 1) * kFeatureDim + 8;  // slice 9, column 8
constexpr int feature_of(int a, int b) {
  if (a == kOne) return b == kOne ? kConstantFeature : -1;
  if (b == kOne) return a;  // slice 0, the linear terms
  const int d = (b - a + kFeatureDim) % kFeatureDim;
  if (d < 8) return (1 + d) * kFeatureDim + a;            // slices 1..8, column a
  if (d == 8 && a < 8) return (kSlices - 1) * kFeatureDim + a;  // slice 9's pairs
  return -1;
}

}  // namespace based
