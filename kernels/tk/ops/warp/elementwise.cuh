#pragma once
// Element-wise operations at warp scope on register tiles (either layout) and register vectors:
// every lane works on its own pairs, so the layout never matters. Destination first; the
// destination may be an operand. Scalars are floats, rounded to the element type once.
//
//   warp::zero(o);  warp::mul(s, s, scale);  warp::exp2(s, s);  warp::copy(p_bf16, s);
#include <limits>
#include <type_traits>

#include "tk/ops/warp/pair_math.cuh"
#include "tk/types/rt.cuh"

namespace tk::warp {
namespace detail {

template <class D, class S>
inline constexpr bool same_shape = std::is_same_v<typename S::template like<typename D::element>, D>;

template <class Op, class X>
__device__ __forceinline__ void map(X& d, const X& a) {
#pragma unroll
  for (int k = 0; k < X::pairs; ++k) d.data[k] = Op::apply(a.data[k]);
}
template <class Op, class X>
__device__ __forceinline__ void map(X& d, const X& a, const X& b) {
#pragma unroll
  for (int k = 0; k < X::pairs; ++k) d.data[k] = Op::apply(a.data[k], b.data[k]);
}
template <class Op, class X>
__device__ __forceinline__ void map(X& d, const X& a, float b) {
  const auto bb = from_float2<typename X::pair>({b, b});
#pragma unroll
  for (int k = 0; k < X::pairs; ++k) d.data[k] = Op::apply(a.data[k], bb);
}

}  // namespace detail

// Initialisers.
template <class X>
__device__ __forceinline__ void fill(X& d, float value) {
  const auto v = detail::from_float2<typename X::pair>({value, value});
#pragma unroll
  for (int k = 0; k < X::pairs; ++k) d.data[k] = v;
}
template <class X>
__device__ __forceinline__ void zero(X& d) {
  fill(d, 0.0f);
}
template <class X>
__device__ __forceinline__ void neg_inf(X& d) {
  fill(d, -std::numeric_limits<float>::infinity());
}

// Conversion between element types of the same shape (float <-> bf16 / fp16, round to nearest).
template <class D, class S>
__device__ __forceinline__ void copy(D& d, const S& s) {
  static_assert(detail::same_shape<D, S>, "warp::copy: source and destination must have the same shape and layout");
#pragma unroll
  for (int k = 0; k < D::pairs; ++k) d.data[k] = detail::from_float2<typename D::pair>(detail::to_float2(s.data[k]));
}

// Unary.
template <class X>
__device__ __forceinline__ void exp(X& d, const X& a) {
  detail::map<detail::exp_op>(d, a);
}
template <class X>
__device__ __forceinline__ void exp2(X& d, const X& a) {
  detail::map<detail::exp2_op>(d, a);
}
template <class X>
__device__ __forceinline__ void log2(X& d, const X& a) {
  detail::map<detail::log2_op>(d, a);
}
template <class X>
__device__ __forceinline__ void log(X& d, const X& a) {  // natural logarithm
  detail::map<detail::log_op>(d, a);
}
template <class X>
__device__ __forceinline__ void abs(X& d, const X& a) {
  detail::map<detail::abs_op>(d, a);
}

// Binary, tile-tile (vector-vector) and tile-scalar (vector-scalar).
#define TK_WARP_BINARY(name)                                                 \
  template <class X>                                                         \
  __device__ __forceinline__ void name(X& d, const X& a, const X& b) {       \
    detail::map<detail::name##_op>(d, a, b);                                 \
  }                                                                          \
  template <class X>                                                         \
  __device__ __forceinline__ void name(X& d, const X& a, float b) {          \
    detail::map<detail::name##_op>(d, a, b);                                 \
  }
TK_WARP_BINARY(add)
TK_WARP_BINARY(sub)
TK_WARP_BINARY(mul)
TK_WARP_BINARY(div)
TK_WARP_BINARY(max)
TK_WARP_BINARY(min)
#undef TK_WARP_BINARY

}  // namespace tk::warp
