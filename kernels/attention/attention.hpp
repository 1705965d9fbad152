#pragma once
// FlashAttention forward written in the DSL (kernels/tk): O = softmax(Q K^T / sqrt(D)) V per
// (batch, head), bf16 in and out, fp32 softmax, and the row logsumexp a backward pass needs.
//
// Layout (PyTorch SDPA's (B, H, N, D)): Q and O are [batch][heads][seq][head_dim], K and V
// [batch][kv_heads][keys(s)][head_dim], contiguous unless given strides (Strides below), LSE
// [batch][heads][seq] float, always contiguous. Query head h reads
// key/value head h / (heads / kv_heads) (grouped-query attention). LSE is the natural log of
// sum_j exp(q.k_j / sqrt(D)) over the keys the row attends to (mask.hpp: with fewer keys than
// queries the causal mask leaves the first rows none; their O is 0 and LSE +inf).
//
// Two kernels: `wgmma` (sm_90a: TMA, wgmma, producer/consumer warpgroups; attention_hopper.cu)
// and `mma_sync` (portable, sm_80 and newer: warps with mma.sync; attention_portable.cu).
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kernels/attention/mask.hpp"
#include "kernels/attention/varlen.hpp"

namespace attention {

enum class Kernel { wgmma, mma_sync };

// seq: queries per sequence; seq_k: keys (and values) per sequence, 0 for as many as queries.
struct Shape {
  int batch, heads, kv_heads, seq, head_dim;
  bool causal;
  int seq_k = 0;
};

constexpr int keys(Shape s) { return s.seq_k > 0 ? s.seq_k : s.seq; }
constexpr Mask mask_of(Shape s) { return {keys(s), keys(s) - s.seq, s.causal}; }

struct Tensors {
  const __nv_bfloat16 *q, *k, *v;
  __nv_bfloat16* o;
  float* lse;
};

// Where a (B, H, N, D) tensor's elements lie: element strides between batches, heads, rows and
// head-dim elements, as torch.Tensor.stride() gives them. The TMA reads any such tensor whose
// head dim is contiguous (dim = 1), whose other strides are positive multiples of 16 bytes (8
// elements) and whose base is 16-byte aligned; the stride of an axis of extent 1 is never used
// and may be anything. A projection's output viewed (B, N, H, D) and transposed to (B, H, N, D)
// has strides {N H D, D, H D, 1}: read in place.
struct Strides {
  std::int64_t batch, head, seq, dim;
  friend bool operator==(const Strides&, const Strides&) = default;
};

// The strides of a contiguous (B, H, N, D) tensor with `heads` heads.
Strides contiguous(int heads, int seq, int head_dim);

// Each tensor's strides; one left empty is contiguous. Only the `wgmma` kernels take others.
struct ForwardLayout {
  std::optional<Strides> q = {}, k = {}, v = {}, o = {};
};
struct BackwardLayout {
  std::optional<Strides> q = {}, k = {}, v = {}, o = {}, d_o = {}, dq = {}, dk = {}, dv = {};
};

// 4 B H Nq Nk D (two matrix products of 2 Nq Nk D each per head) over the attended area: with
// the causal mask Nq Nk - Nq^2 / 2 where Nq <= Nk, else Nk^2 / 2 (half of it at Nq = Nk).
double flops(Shape s);

// Why `kernel` cannot run `s` ("" when it can), naming what is valid: head dim 64, 96, 128 or
// 256 (`mma_sync`: 64 or 128).
std::string refusal(Shape s, Kernel kernel);

// Why the backward cannot run `s` ("" when it can): refusal(s, Kernel::wgmma), and head dim 64 or 128.
std::string backward_refusal(Shape s);

// Why `kernel` cannot read or write the tensors where they lie ("" when it can): refusal(s,
// kernel), then each tensor's strides and (for `wgmma`, whose TMA needs it) base address, naming
// the tensor and what is valid. Outputs must not overlap themselves. `mma_sync` takes contiguous
// tensors only.
std::string refusal(const Tensors& t, Shape s, Kernel kernel, const ForwardLayout& layout);

// A forward pass ready to launch (tensor maps and launch attributes prepared once, outside any
// timed launch). Throws std::invalid_argument with refusal(t, s, kernel, layout) when that is
// not empty.
class Forward {
 public:
  Forward(const Tensors& t, Shape s, Kernel kernel, const ForwardLayout& layout = {});
  void operator()(cudaStream_t stream) const { launch_(stream); }

 private:
  std::function<void(cudaStream_t)> launch_;
};

// Packed batches of sequences of different lengths (varlen.hpp: layout, LSE, masks), `wgmma`
// kernel. A packed tensor's element strides between rows and heads, as torch.Tensor.stride()
// gives them for (total, H, D); the head dim contiguous. The TMA's rules as Strides' above: the
// base 16-byte aligned, the strides positive multiples of 8 elements. A (total, 3, H, D) projection's
// Q, K and V slices have strides {3 H D, D}: read in place.
struct PackedStrides {
  std::int64_t row, head;
};
struct VarlenLayout {
  std::optional<PackedStrides> q = {}, k = {}, v = {}, o = {};  // empty: contiguous (total, H, D)
};

// 4 H D times the pairs attended, summed over the sequences (flops(Shape) of each).
double flops(const Varlen& s);

// Why the `wgmma` forward cannot run the packed batch ("" when it can): the offsets
// (offsets_refusal), heads and head dim as refusal(Shape), the tensors' bases and strides.
std::string refusal(const Tensors& t, const Varlen& s, const VarlenLayout& layout = {});

// A packed batch's forward ready to launch: each sequence's tensor maps and the work items made
// once and copied to the device (a few hundred bytes per sequence). Throws std::invalid_argument
// with refusal(t, s, layout) when that is not empty, std::runtime_error when the device memory
// cannot be allocated.
class VarlenForward {
 public:
  VarlenForward(const Tensors& t, const Varlen& s, const VarlenLayout& layout = {});
  void operator()(cudaStream_t stream) const { launch_(stream); }

 private:
  std::function<void(cudaStream_t)> launch_;
};

// The e4m3 forward (the `wgmma` kernel family, sm_90a, D = 128): Q, K and V in fp8 e4m3 with one
// float scale per tensor (a stored value x stands for x scale), O in bf16 and LSE in float as the
// bf16 forward's. The softmax runs in fp32 on S scaled by q_scale k_scale / sqrt(D); P is rounded
// to e4m3 for P V (kernels/attention/README.md says how, and what error that implies). Tensors
// contiguous (B, H, N, D), Q, K, V and O 16-byte aligned.
enum class Dtype { bf16, e4m3 };

struct Fp8Tensors {
  const __nv_fp8_e4m3 *q, *k, *v;
  float q_scale, k_scale, v_scale;
  __nv_bfloat16* o;
  float* lse;
};

// Why the `wgmma` kernel cannot run `s` in `dtype` ("" when it can): refusal(s, Kernel::wgmma),
// and for e4m3 a head dim of 128 and at most 65535 batch x kv_heads (the V^T pass's grid).
std::string refusal(Shape s, Dtype dtype);

// The same, then the tensors: alignment, and scales positive and finite.
std::string refusal(const Fp8Tensors& t, Shape s);

// The device scratch an Fp8Forward of shape `s` holds: V^T, B Hkv D x (N padded to 128) bytes.
std::size_t fp8_scratch_bytes(Shape s);

// An e4m3 forward ready to launch: its scratch (V^T) allocated and tensor maps prepared once.
// Each launch is two kernels on `stream`: V^T from V, then the forward. Throws
// std::invalid_argument with refusal(t, s) when that is not empty, std::runtime_error when the
// scratch cannot be allocated.
class Fp8Forward {
 public:
  Fp8Forward(const Fp8Tensors& t, Shape s);
  void operator()(cudaStream_t stream) const { launch_(stream); }

 private:
  std::shared_ptr<void> scratch_;
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
// dK = dS^T Q, dQ = dS K) against the forward's two. The `wgmma` backward's deterministic path
// issues two more (S and dP again for dQ: hopper/backward_config.cuh), which this count leaves
// out; its reducing path (BackwardOptions) issues the five.
double flops_backward(Shape s);

// How the backward computes dQ.
//   deterministic: a kernel of its own recomputes S and dP (seven matrix products for the five
//     counted) and sums each dQ element in one thread in key order: the same inputs give the
//     same bits.
//   reducing: the dK/dV kernel also forms each step's share of dQ (five products, FlashAttention-3's
//     count) and hands it to a writer warp that adds it into an fp32 accumulator in the scratch
//     with the TMA's bulk reduction, converted to bf16 by a last kernel. The additions' order
//     across key blocks is not fixed, so dQ's bits may differ from run to run (dK and dV's do
//     not); the scratch grows by B H N D floats (N padded to 128).
//   fastest (the default): whichever of the two measured faster for the shape (dq_path).
enum class DqPath { fastest, deterministic, reducing };

struct BackwardOptions {
  DqPath dq = DqPath::fastest;
};

// The path a backward of shape `s` takes: options.dq, with `fastest` resolved by the H200's
// measurements of both paths in turns: the reducing path on every shape
// (docs/decisions/021-backward-dq-path-default.md). The shape stays a parameter: the rule is a
// measurement, and a kernel change may move it again.
DqPath dq_path(Shape s, BackwardOptions options);

// Why the backward cannot take these tensors ("" when it can), as the forward's refusal; the
// LSE must be the forward's, contiguous [batch][heads][seq].
std::string refusal(const BackwardTensors& t, Shape s, const BackwardLayout& layout);

// A backward pass ready to launch, for the `wgmma` kernels (sm_90a): tensor maps, launch
// attributes and its fp32 scratch (D = rowsum(dO * O) and LSE in base 2, per query row) prepared
// once. Throws std::invalid_argument with refusal(t, s, layout) when that is not empty, and
// std::runtime_error when the scratch cannot be allocated. On the faster dQ path for the shape by
// default (dq_path); DqPath::deterministic when the same inputs must give the same bits.
class Backward {
 public:
  Backward(const BackwardTensors& t, Shape s, const BackwardLayout& layout = {}, BackwardOptions options = {});
  // The same on the caller's scratch, backward_scratch_bytes(s, options) of device memory, 16-byte
  // aligned, which must outlive every launch: an allocator that orders its blocks by stream
  // (PyTorch's) lends it for one step without the device-wide wait of cudaFree.
  Backward(const BackwardTensors& t, Shape s, const BackwardLayout& layout, float* scratch,
           BackwardOptions options = {});
  void operator()(cudaStream_t stream) const { launch_(stream); }

 private:
  Backward(const BackwardTensors& t, Shape s, const BackwardLayout& layout, std::shared_ptr<void> scratch,
           BackwardOptions options);

  std::shared_ptr<void> scratch_;  // owned here unless lent, so callers need not know its layout
  std::function<void(cudaStream_t)> launch_;
};

// The scratch a Backward of shape `s` (which must pass refusal) takes on the path `options` picks.
std::size_t backward_scratch_bytes(Shape s, BackwardOptions options = {});

// A packed batch's backward (varlen.hpp's layout; dQ like Q, dK and dV like K), either dQ path,
// as Backward: 2.5 x flops(s); refusal as the varlen forward's, over the eight tensors; the
// scratch holds each sequence's rows padded to 128 (varlen_backward.hpp). Sequences with keys but
// no queries get dK = dV = 0, with queries but no keys dQ = 0.
struct VarlenBackwardLayout {
  std::optional<PackedStrides> q = {}, k = {}, v = {}, o = {}, d_o = {}, dq = {}, dk = {}, dv = {};
};
double flops_backward(const Varlen& s);
DqPath dq_path(const Varlen& s, BackwardOptions options);  // the dense rule
std::string refusal(const BackwardTensors& t, const Varlen& s, const VarlenBackwardLayout& layout = {});
std::size_t backward_scratch_bytes(const Varlen& s, BackwardOptions options = {});

class VarlenBackward {
 public:
  VarlenBackward(const BackwardTensors& t, const Varlen& s, const VarlenBackwardLayout& layout = {},
                 BackwardOptions options = {});
  // On the caller's scratch (backward_scratch_bytes(s, options), 16-byte aligned), as Backward's.
  VarlenBackward(const BackwardTensors& t, const Varlen& s, const VarlenBackwardLayout& layout, float* scratch,
                 BackwardOptions options = {});
  void operator()(cudaStream_t stream) const { launch_(stream); }

 private:
  VarlenBackward(const BackwardTensors& t, const Varlen& s, const VarlenBackwardLayout& layout,
                 std::shared_ptr<void> scratch, BackwardOptions options);

  std::shared_ptr<void> scratch_;
  std::function<void(cudaStream_t)> launch_;
};

}  // namespace attention
