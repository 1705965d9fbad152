#pragma once
// What the based probe and its tests check the Based kernel with, on the GPU: the quadratic form
// of Based in fp32 (no features, no recurrence: a different computation from the kernel's), and
// the errors of a kernel's output against it. Random inputs come from attention_check::fill_normal.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/based/based.hpp"

namespace tkprobe::based_check {

// x[i] *= factor for `count` bf16 values (exact for a power of two): inputs with large feature values.
void scale(__nv_bfloat16* x, std::size_t count, float factor, cudaStream_t stream);

// based.hpp's forward from the same bf16 inputs in fp32 arithmetic, quadratic in the sequence:
// o_i = sum_{j<=i} phi(q_i.k_j / sqrt(feature dim)) v_j (divided by the sum of the weights when
// normalized), O as float [B][H][N][value_dim]. Feature dim 16, value dim 64 or 128. SIMT: each
// block keeps 64 queries in shared memory and streams keys and values 64 at a time.
void reference_forward(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, float* o, based::Shape s,
                       cudaStream_t stream);

struct Errors {
  double rel_error;        // ||O - O_ref||_F / ||O_ref||_F
  double worst_row_error;  // max over rows of ||O_row - O_ref_row|| / ||O_ref_row|| (check::compare_rows)
};

// A kernel's bf16 O against the reference's. Any NaN (a poisoned element that was never written)
// makes the figure NaN, which fails every `error < tolerance` check.
Errors compare_to_reference(const __nv_bfloat16* o, const float* o_ref, based::Shape s, cudaStream_t stream);

}  // namespace tkprobe::based_check
