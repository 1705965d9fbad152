#pragma once
// What the e4m3 attention forward is checked with (the probe's --dtype e4m3 and the GPU tests):
// bf16 inputs quantized to e4m3 with a per-tensor scale, and the error bounds fp8 implies.
//
// The check measures the kernel, not the quantization: the fp32 reference runs on the dequantized
// inputs (x8 x scale), which are exactly the values the kernel multiplies, because the scale is a
// power of two (at or above amax / 448, so nothing saturates) and e4m3's 4 significant bits times
// a power of two fit bf16 exactly.
//
// What remains is P: the kernel rounds P (times 256, a power of two) to e4m3, 3 mantissa bits, so
// each element is off by at most 2^-4 relative (half an ulp), ~2.65e-2 rms for values spread
// over their binade. O = sum_j p_j v_j / l is an average of rows of V that do not cancel the
// errors out, relative to O's own size: ||dO|| / ||O|| is the rms of the p-weighted relative
// errors, ~2.7e-2 expected and at most 2^-4 / sqrt(3) = 3.6e-2 if every element sat at the worst
// point of its binade; plus the bf16 store (2^-9) and l summing the unrounded P. Bounds: 4e-2 over
// the whole tensor; 1e-1 for the worst row (a row's error is at most 2^-4 when its weighted rows
// of V are orthogonal, ~so for random V at D = 128, with room for rows of few keys, where the
// errors have no chance to average). LSE comes from the unrounded P in fp32: the bf16 bound.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "src/device_buffer.hpp"

namespace tkprobe::attention_check {

inline constexpr double kE4m3MaxRelError = 4e-2;
inline constexpr double kE4m3MaxRowError = 1e-1;

// Quantizes `count` bf16 values at `x` to e4m3 into `out` with scale = 2^ceil(log2(amax / 448))
// (1 for an all-zero tensor) and overwrites `x` with the dequantized values, so a reference run on
// `x` sees exactly what a kernel reads from `out` with `scale`. Returns the scale (synchronises
// `stream` to read amax).
float quantize_e4m3(__nv_bfloat16* x, __nv_fp8_e4m3* out, std::size_t count, cudaStream_t stream);

// The scale quantize_e4m3 picks for a tensor whose largest magnitude is amax (host side, for tests).
float e4m3_scale_for(float amax);

// An e4m3 KV cache made from a bf16 one of `count` values [rows][kv_heads][D] each, with a scale
// per kv head as a serving engine keeps them, chosen for ~N(0, 1) entries: powers of two (so the
// dequantized values are exact in bf16, as above) from 2^-6 to 2^-4 in turn over the heads, V's a
// step on from K's so the two differ; every entry divided by its head's scale, rounded to nearest,
// saturated at 448.
struct E4m3KvCache {
  E4m3KvCache(const __nv_bfloat16* k_bf16, const __nv_bfloat16* v_bf16, std::size_t count, int kv_heads, int head_dim,
              cudaStream_t stream);
  tkprobe::DeviceBuffer<__nv_fp8_e4m3> k, v;
  tkprobe::DeviceBuffer<float> k_scale, v_scale;
};

}  // namespace tkprobe::attention_check
