#pragma once
// Arithmetic on the packed pairs that register tiles and vectors hold: conversions through
// float2, and the element-wise operations as functors with a float2 form and a packed 16-bit
// form. add, sub, mul, max, min and abs use the packed bf16x2 / f16x2 instructions (one
// rounding, as in float); div, exp, exp2 and log compute in float and round once.
#include <limits>

#include "tk/types/packed.cuh"

namespace tk::warp::detail {

__device__ __forceinline__ float2 to_float2(float2 v) { return v; }
__device__ __forceinline__ float2 to_float2(__nv_bfloat162 v) { return __bfloat1622float2(v); }
__device__ __forceinline__ float2 to_float2(__half2 v) { return __half22float2(v); }

template <class P>
__device__ __forceinline__ P from_float2(float2 v);
template <>
__device__ __forceinline__ float2 from_float2<float2>(float2 v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat162 from_float2<__nv_bfloat162>(float2 v) {
  return __float22bfloat162_rn(v);
}
template <>
__device__ __forceinline__ __half2 from_float2<__half2>(float2 v) {
  return __float22half2_rn(v);
}

// {x, x} and {y, y}: one entry of a vector pair broadcast over a tile pair.
__device__ __forceinline__ float2 lows(float2 v) { return {v.x, v.x}; }
__device__ __forceinline__ float2 highs(float2 v) { return {v.y, v.y}; }
__device__ __forceinline__ __nv_bfloat162 lows(__nv_bfloat162 v) { return __low2bfloat162(v); }
__device__ __forceinline__ __nv_bfloat162 highs(__nv_bfloat162 v) { return __high2bfloat162(v); }
__device__ __forceinline__ __half2 lows(__half2 v) { return __low2half2(v); }
__device__ __forceinline__ __half2 highs(__half2 v) { return __high2half2(v); }

// A 16-bit pair computed through float, rounded once.
template <class Op, class H>
__device__ __forceinline__ H through_float(H a) {
  return from_float2<H>(Op::apply(to_float2(a)));
}
template <class Op, class H>
__device__ __forceinline__ H through_float(H a, H b) {
  return from_float2<H>(Op::apply(to_float2(a), to_float2(b)));
}

struct add_op {
  __device__ static float2 apply(float2 a, float2 b) { return {a.x + b.x, a.y + b.y}; }
  template <class H>
  __device__ static H apply(H a, H b) { return __hadd2(a, b); }
};
struct sub_op {
  __device__ static float2 apply(float2 a, float2 b) { return {a.x - b.x, a.y - b.y}; }
  template <class H>
  __device__ static H apply(H a, H b) { return __hsub2(a, b); }
};
struct mul_op {
  __device__ static float2 apply(float2 a, float2 b) { return {a.x * b.x, a.y * b.y}; }
  template <class H>
  __device__ static H apply(H a, H b) { return __hmul2(a, b); }
};
struct div_op {  // IEEE division (div.rn.f32)
  __device__ static float2 apply(float2 a, float2 b) { return {a.x / b.x, a.y / b.y}; }
  template <class H>
  __device__ static H apply(H a, H b) { return through_float<div_op>(a, b); }
};
struct max_op {
  __device__ static float2 apply(float2 a, float2 b) { return {fmaxf(a.x, b.x), fmaxf(a.y, b.y)}; }
  template <class H>
  __device__ static H apply(H a, H b) { return __hmax2(a, b); }
};
struct min_op {
  __device__ static float2 apply(float2 a, float2 b) { return {fminf(a.x, b.x), fminf(a.y, b.y)}; }
  template <class H>
  __device__ static H apply(H a, H b) { return __hmin2(a, b); }
};
struct abs_op {
  __device__ static float2 apply(float2 a) { return {fabsf(a.x), fabsf(a.y)}; }
  template <class H>
  __device__ static H apply(H a) { return __habs2(a); }
};
// __expf is ex2.approx of x * log2(e): at most 2 + floor(|1.173 x|) ulp off (CUDA C++
// Programming Guide, intrinsic functions), fast enough for a softmax.
struct exp_op {
  __device__ static float2 apply(float2 a) { return {__expf(a.x), __expf(a.y)}; }
  template <class H>
  __device__ static H apply(H a) { return through_float<exp_op>(a); }
};
// exp2f is ex2.approx with denormal handling, at most 2 ulp off.
struct exp2_op {
  __device__ static float2 apply(float2 a) { return {exp2f(a.x), exp2f(a.y)}; }
  template <class H>
  __device__ static H apply(H a) { return through_float<exp2_op>(a); }
};
// log2f is lg2.approx with denormal handling (CUDA C++ Programming Guide: 1 ulp off).
struct log2_op {
  __device__ static float2 apply(float2 a) { return {log2f(a.x), log2f(a.y)}; }
  template <class H>
  __device__ static H apply(H a) { return through_float<log2_op>(a); }
};

// logf is within 1 ulp (CUDA C++ Programming Guide, mathematical functions): a logsumexp is
// computed once per row, so there is no call for the approximate __logf.
struct log_op {
  __device__ static float2 apply(float2 a) { return {logf(a.x), logf(a.y)}; }
  template <class H>
  __device__ static H apply(H a) { return through_float<log_op>(a); }
};

// Scalar reductions, run in float whatever the element type (one rounding at the end).
struct max_reduce {
  static constexpr float identity = -std::numeric_limits<float>::infinity();
  __device__ static float apply(float a, float b) { return fmaxf(a, b); }
};
struct sum_reduce {
  static constexpr float identity = 0.0f;
  __device__ static float apply(float a, float b) { return a + b; }
};

}  // namespace tk::warp::detail
