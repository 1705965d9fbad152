#pragma once
// Matrix multiply-accumulate at warp scope through mma.sync m16n8k16 (PTX ISA 9.7.13.4: the
// register fragments; tk/arch/mma_sync.cuh). A 16x16 subtile of a row_l bf16/fp16 tile is one
// A operand as it stands; the B operand of columns 8h..8h+7 is pairs h and h+2 of a 16x16
// subtile of a col_l K x N tile, and equally of a row_l N x K tile (the same registers: the
// transpose), which gives A * B^T for free; the float accumulator of columns 8h..8h+7 is
// pairs 2h and 2h+1 of a row_l float subtile.
//
//   warp::mma_AB(o, p, v, o);    // o (16 x D) += p (16 x N) * v (N x D, col_l)
//   warp::mma_ABt(s, q, k, s);   // s (16 x N) += q (16 x D) * k^T (k: N x D, row_l)
#include <cstdint>
#include <type_traits>

#include "tk/arch/mma_sync.cuh"
#include "tk/types/rt.cuh"

namespace tk::warp {
namespace detail {

// d = a * b + c over M x N; b_subtile(k, j) gives the four pairs of B's subtile (k, j) of K x N.
// Each accumulator subtile is read from c whole before d's is written, so d may be c.
template <class T, int M, int K, int N, class BSubtile>
__device__ __forceinline__ void mma(rt<float, M, N, row_l>& d, const rt<T, M, K, row_l>& a, BSubtile b_subtile,
                                    const rt<float, M, N, row_l>& c) {
  using Mma = arch::MmaSync<arch::f32_accumulate_t<T>>;
#pragma unroll
  for (int i = 0; i < M / layout::kSubtile; ++i)
#pragma unroll
    for (int j = 0; j < N / layout::kSubtile; ++j) {
      float acc[2][4];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float2 top = c.at(i, j, 2 * h), bottom = c.at(i, j, 2 * h + 1);  // rows g, g + 8
        acc[h][0] = top.x, acc[h][1] = top.y, acc[h][2] = bottom.x, acc[h][3] = bottom.y;
      }
#pragma unroll
      for (int k = 0; k < K / layout::kSubtile; ++k) {
        const std::uint32_t av[4] = {bits(a.at(i, k, 0)), bits(a.at(i, k, 1)), bits(a.at(i, k, 2)), bits(a.at(i, k, 3))};
        const auto* b = b_subtile(k, j);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const std::uint32_t bv[2] = {bits(b[h]), bits(b[h + 2])};  // k 0-7, 8-15 of column g + 8h
          Mma::mma(acc[h], av, bv);
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        d.at(i, j, 2 * h) = {acc[h][0], acc[h][1]};
        d.at(i, j, 2 * h + 1) = {acc[h][2], acc[h][3]};
      }
    }
}

template <class D, class A, class B, class C>
constexpr void check_mma_types() {
  static_assert(std::is_same_v<typename A::element, __nv_bfloat16> || std::is_same_v<typename A::element, __half>,
                "warp::mma: A and B must hold bf16 or fp16");
  static_assert(std::is_same_v<typename A::element, typename B::element>, "warp::mma: A and B must hold the same type");
  static_assert(std::is_same_v<typename D::element, float> && std::is_same_v<D, C>,
                "warp::mma: C and D must be the same float tile");
  static_assert(A::row_major && D::row_major, "warp::mma: A, C and D must be row_l tiles");
  static_assert(A::rows == D::rows, "warp::mma: A and D must have the same rows (M)");
}

}  // namespace detail

// d = a * b + c: a row_l M x K, b col_l K x N, c and d float row_l M x N.
template <class D, class A, class B, class C>
__device__ __forceinline__ void mma_AB(D& d, const A& a, const B& b, const C& c) {
  detail::check_mma_types<D, A, B, C>();
  static_assert(!B::row_major, "warp::mma_AB: B must be a col_l tile (mma_ABt takes B^T as a row_l tile)");
  static_assert(A::cols == B::rows && B::cols == D::cols, "warp::mma_AB: shapes must be M x K, K x N -> M x N");
  detail::mma(d, a, [&](int k, int j) { return &b.at(k, j, 0); }, c);
}

// d = a * b^T + c: a row_l M x K, b row_l N x K, c and d float row_l M x N.
template <class D, class A, class B, class C>
__device__ __forceinline__ void mma_ABt(D& d, const A& a, const B& b, const C& c) {
  detail::check_mma_types<D, A, B, C>();
  static_assert(B::row_major, "warp::mma_ABt: B must be a row_l tile (mma_AB takes a col_l one)");
  static_assert(A::cols == B::cols && B::rows == D::cols, "warp::mma_ABt: shapes must be M x K, N x K -> M x N");
  detail::mma(d, a, [&](int k, int j) { return &b.at(j, k, 0); }, c);
}

}  // namespace tk::warp
