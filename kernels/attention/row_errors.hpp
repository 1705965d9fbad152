#pragma once
// A kernel's bf16 output against an fp32 reference, row by row on the GPU: the attention forward's
// O, its backward's gradients and Based's O are all checked this way, so a few wrong rows (a bad
// last tile) cannot hide in a norm over millions of elements.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace tkprobe::check {

struct RowErrors {
  double rel_error;        // ||g - g_ref||_F / ||g_ref||_F (0 when both are exactly 0, inf when only g_ref is)
  double worst_row_error;  // max over rows of ||g_r - g_ref_r|| / max(||g_ref_r||, kRowFloor x RMS row norm)
  double max_abs_error;    // max |g - g_ref|
  std::size_t non_finite;  // elements of g that are NaN or infinite (poison left unwritten)
};
// Rows whose reference norm is below this fraction of the tensor's RMS row norm (a causal first
// query's dQ, which the softmax's rows summing to one cancels) are measured against that instead.
inline constexpr double kRowFloor = 0.1;

// `got` and `ref`: `rows` rows of `cols` elements. A NaN anywhere makes every figure but
// non_finite NaN, which fails every `error < tolerance` check.
RowErrors compare_rows(const __nv_bfloat16* got, const float* ref, std::size_t rows, int cols, cudaStream_t stream);

}  // namespace tkprobe::check
