#pragma once
// What the attention probe and its tests check the kernels with, all on the GPU (the sweep's
// tensors hold ~10^8 elements each, far too many for the host): fresh random bf16 inputs, an fp32
// reference forward pass, and the errors of a kernel's output against it.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/row_errors.hpp"

namespace tkprobe::attention_check {

// `tkprobe attention`'s sweep (and tkprobe-bench's): 16k tokens in all (B x N = 16384) at hidden
// size 2048 (H x D), the grid FlashAttention-2's paper reports, so figures can be set beside
// published ones; by head dim (64, 128), then mask (off, causal), then N (1024, 4096, 16384).
// sweep_at: one head dim's six (the suite's D = 256 forward).
inline std::vector<attention::Shape> sweep_at(int d) {
  constexpr int kTokens = 16384, kHidden = 2048;
  std::vector<attention::Shape> out;
  for (bool causal : {false, true})
    for (int n : {1024, 4096, 16384}) out.push_back({kTokens / n, kHidden / d, kHidden / d, n, d, causal});
  return out;
}
inline std::vector<attention::Shape> sweep() {
  std::vector<attention::Shape> out = sweep_at(64);
  for (const attention::Shape& s : sweep_at(128)) out.push_back(s);
  return out;
}

// `count` bf16 values, each ~N(0, 1): Box-Muller on a counter-based hash of (seed, index), so a
// seed gives the same values on any GPU and launch shape, and different seeds independent ones.
void fill_normal(__nv_bfloat16* out, std::size_t count, std::uint64_t seed, cudaStream_t stream);

// The forward pass attention.hpp defines (same layout, grouped-query heads, mask.hpp's mask and
// LSE, any numbers of queries and keys) from the same bf16 inputs in fp32 arithmetic: O as float
// [B][H][N][D], LSE as float [B][H][N]; a row attending no key gets O = 0 and LSE = +inf. Head
// dim 64, 96, 128 or 256. SIMT fp32: each block keeps 64 queries in shared memory and streams K and V
// through it 64 keys at a time with an online softmax.
void reference_forward(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* o, float* lse,
                       attention::Shape s, cudaStream_t stream);

struct Errors {
  double rel_error;        // ||O - O_ref||_F / ||O_ref||_F
  double lse_error;        // max |LSE - LSE_ref| (0 for a row whose LSE is +inf in both)
  double worst_row_error;  // max over rows of ||O_row - O_ref_row|| / ||O_ref_row|| (check::compare_rows)
};

// A kernel's bf16 O and float LSE against the reference's. Any NaN (a poisoned element that was
// never written) makes the figure NaN, which fails every `error < tolerance` check.
Errors compare_to_reference(const __nv_bfloat16* o, const float* lse, const float* o_ref, const float* lse_ref,
                            attention::Shape s, cudaStream_t stream);

// The backward pass attention.hpp defines, from the same bf16 inputs (Q, K, V, the forward's O,
// dO) and float LSE, in fp32 arithmetic: dQ as float [B][H][N][D], dK and dV as float
// [B][KVH][keys(s)][D] (summed over the query heads of each group). P = exp(S / sqrt(D) - LSE)
// where the query attends the key, else 0 (so a row attending no key has dQ = 0),
// D = rowsum(dO * O), dS = P (dP - D) with dP = dO V^T; dV = P^T dO, dK = dS^T Q / sqrt(D),
// dQ = dS K / sqrt(D). SIMT fp32 in 64 x 64 tiles through shared memory: one kernel per query
// tile for dQ (which also writes D to `delta`, float [B][H][N]), then one per key tile for dK
// and dV, each walking the other side's tiles in order (deterministic).
void reference_backward(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, const __nv_bfloat16* o,
                        const __nv_bfloat16* d_o, const float* lse, float* dq, float* dk, float* dv, float* delta,
                        attention::Shape s, cudaStream_t stream);

struct BackwardErrors {
  check::RowErrors dq, dk, dv;
};

// A kernel's bf16 dQ, dK, dV against the reference's float ones. A NaN anywhere (a poisoned
// element never written) makes every figure of that gradient NaN.
BackwardErrors compare_backward(const __nv_bfloat16* dq, const __nv_bfloat16* dk, const __nv_bfloat16* dv,
                                const float* dq_ref, const float* dk_ref, const float* dv_ref, attention::Shape s,
                                cudaStream_t stream);

}  // namespace tkprobe::attention_check
