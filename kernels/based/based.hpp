#pragma once
// Based linear attention (Arora et al., 2024), forward, written in the DSL (kernels/tk), causal:
//
//   o_i = sum_{j<=i} phi(q_i.k_j / 4) v_j  [ / sum_{j<=i} phi(q_i.k_j / 4)  when normalized ]
//   phi(x) = 1 + x + x^2 / 2   (the second-order Taylor expansion of exp; 4 = sqrt(feature dim))
//
// per (batch, head), bf16 in and out, fp32 arithmetic and state. Because phi is a polynomial it
// factors through 1 + 16 + 16^2 = 273 features of q and k, so the kernel runs in linear time: a
// chunked recurrence of running feature x value states (kernels/based/README.md, hopper/).
//
// Layout (contiguous): Q and K [batch][heads][seq][feature_dim], V and O [batch][heads][seq][value_dim];
// value dim 64 or 128.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <functional>
#include <string>

namespace based {

inline constexpr int kFeatureDim = 16;  // the only feature dim the kernel takes
inline constexpr int kChunk = 64;       // rows per step of the recurrence (the count below uses it)

struct Shape {
  int batch, heads, seq, feature_dim, value_dim;
  bool normalize;
};

struct Tensors {
  const __nv_bfloat16 *q, *k, *v;
  __nv_bfloat16* o;
};

// The multiply-adds (x 2) of the chunked linear-time form over the unfolded 273 features, per
// row, whatever the kernel folds or skips:
//   intra-chunk, as tensor-core products of full 64 x 64 chunk tiles:
//     S = Q K^T            2 x 64 x feature_dim
//     O += phi(S) V        2 x 64 x value_dim'
//   inter-chunk, over F = 1 + feature_dim + feature_dim^2 features:
//     readout O += f(Q) State            2 x F x value_dim'
//     update  State += f(K)^T V          2 x F x value_dim'
// value_dim' = value_dim + 1 when normalized (the denominator is the same products with v = 1).
// Times batch x heads x seq: a partial last chunk counts only its rows. Element-wise work (the
// feature maps, phi, the division) is not counted.
// At B = H = 16, N = 16384, value dim 64, normalized: 3.41e11, so ThunderKittens' 1.14 ms is
// 299 TFLOP/s, the "over 300" its account gives counting its recompute.
double flops(Shape s);

// Why the kernel cannot run `s` ("" when it can), naming what is valid.
std::string refusal(Shape s);

// A forward pass ready to launch (tensor maps and launch attributes prepared once, outside any
// timed launch). Throws std::invalid_argument with refusal(s) when that is not empty.
class Forward {
 public:
  Forward(const Tensors& t, Shape s);
  void operator()(cudaStream_t stream) const { launch_(stream); }

 private:
  std::function<void(cudaStream_t)> launch_;
};

}  // namespace based
