#pragma once
// The element types of register tiles and vectors and their packed pairs: a register tile or
// vector is an array of pairs (float2, or two 16-bit values in one 32-bit register), which is
// what mma.sync takes and what the packed bf16x2 / f16x2 instructions work on.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace tk {

template <class T>
struct packed_of;
template <>
struct packed_of<float> {
  using type = float2;
};
template <>
struct packed_of<__nv_bfloat16> {
  using type = __nv_bfloat162;
};
template <>
struct packed_of<__half> {
  using type = __half2;
};
template <class T>
using packed = typename packed_of<T>::type;

// A pair as the 32-bit register it is (the operand mma, ldmatrix and stmatrix take), and back.
template <class P>
__device__ __forceinline__ std::uint32_t bits(const P& v) {
  static_assert(sizeof(P) == 4, "bits: a 16-bit pair");
  return *reinterpret_cast<const std::uint32_t*>(&v);
}
template <class P>
__device__ __forceinline__ P from_bits(std::uint32_t v) {
  return *reinterpret_cast<const P*>(&v);
}

}  // namespace tk
