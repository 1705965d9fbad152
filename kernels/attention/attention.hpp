#pragma once
// FlashAttention forward written in the DSL (kernels/tk): O = softmax(Q K^T / sqrt(D)) V per
// (batch, head), bf16 in and out, fp32 softmax, and the row logsumexp a backward pass needs.
//
// Layout (PyTorch SDPA's (B, H, N, D), contiguous): Q and O are [batch][heads][seq][head_dim],
// K and V [batch][kv_heads][seq][head_dim], LSE [batch][heads][seq] float. Query head h reads
// key/value head h / (heads / kv_heads) (grouped-query attention). LSE is the natural log of
// sum_j exp(q.k_j / sqrt(D)) over the keys the row attends to.
//
// Two kernels: `wgmma` (sm_90a: TMA, wgmma, producer/consumer warpgroups; attention_hopper.cu)
// and `mma_sync` (portable, sm_80 and newer: warps with mma.sync; attention_portable.cu).
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>

namespace attention {

enum class Kernel { wgmma, mma_sync };

struct Shape {
  int batch, heads, kv_heads, seq, head_dim;
  bool causal;
};

struct Tensors {
  const __nv_bfloat16 *q, *k, *v;
  __nv_bfloat16* o;
  float* lse;
};

// 4 B H N^2 D (two matrix products of 2 N^2 D each per head), half of it when causal.
double flops(Shape s);

// Why `kernel` cannot run `s` ("" when it can), naming what is valid.
std::string refusal(Shape s, Kernel kernel);

// A forward pass ready to launch (tensor maps and launch attributes prepared once, outside any
// timed launch). `s` must pass refusal().
class Forward {
 public:
  Forward(const Tensors& t, Shape s, Kernel kernel);
  void operator()(cudaStream_t stream) const { launch_(stream); }

 private:
  std::function<void(cudaStream_t)> launch_;
};

// The backward pass: given the forward's inputs, its O and LSE, and dO (the loss's gradient with
// respect to O), the gradients dQ, dK and dV, bf16, in the forward's layout (dK and dV shaped like
// K and V: with grouped-query heads each sums the query heads that share its key/value head).
struct BackwardTensors {
  const __nv_bfloat16 *q, *k, *v, *o, *d_o;
  const float* lse;
  __nv_bfloat16 *dq, *dk, *dv;
};

// 2.5 x flops(s), the count FlashAttention-2 and its successors report backward rates in: five
// matrix products of 2 N^2 D each per head (S = Q K^T and dP = dO V^T recomputed, dV = P^T dO,
// dK = dS^T Q, dQ = dS K) against the forward's two. The `wgmma` backward issues two more
// (S and dP again for dQ: hopper/backward_config.cuh), which this count leaves out.
double flops_backward(Shape s);

// A backward pass ready to launch, for the `wgmma` kernels (sm_90a): tensor maps, launch
// attributes and its fp32 scratch (D = rowsum(dO * O) and LSE in base 2, per query row) prepared
// once. Throws std::invalid_argument with refusal(s, Kernel::wgmma) when that is not empty, and
// std::runtime_error when the scratch cannot be allocated. Deterministic: the same inputs give
// the same bits (no atomics; see kernels/attention/README.md).
class Backward {
 public:
  Backward(const BackwardTensors& t, Shape s);
  void operator()(cudaStream_t stream) const { launch_(stream); }

 private:
  std::shared_ptr<void> scratch_;  // owned here, so callers need not know its size or layout
  std::function<void(cudaStream_t)> launch_;
};

}  // namespace attention
