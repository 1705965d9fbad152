#pragma once
// Loads and stores of register tiles at warp scope (all 32 lanes call them).
//
//   Global memory, row-major with a leading dimension `ld` in elements (the simple path): each
//   lane moves its own pairs; row_l pairs are two adjacent elements, so `src`/`dst` must be
//   aligned to 2 elements and `ld` even; col_l pairs are two elements of one column, moved one
//   at a time.
//   Shared tiles st<T, R, C> (tk/types/st.cuh, swizzled): 16-bit tiles through ldmatrix /
//   stmatrix .x4, one 16x16 subtile per instruction, col_l through .trans (so a row-major
//   shared tile loads straight into an mma B operand); float tiles pair by pair through
//   st::offset (8-byte ld/st.shared for row_l). stmatrix needs sm_90.
//   Register vectors to and from N contiguous elements: global memory or a shared vector.
//   Stores to global memory take an optional bound (valid rows, valid entries) for tiles and
//   vectors that run past the end of a tensor.
#include <cstdint>

#include "tk/arch/ldmatrix.cuh"
#include "tk/arch/shared_memory.cuh"
#include "tk/ops/warp/pairs.cuh"
#include "tk/types/rt.cuh"
#include "tk/types/st.cuh"
#include "tk/types/sv.cuh"

namespace tk::warp {

// Global memory -> registers.
template <class T, int R, int C, class L>
__device__ __forceinline__ void load(rt<T, R, C, L>& d, const T* src, int ld) {
  using P = packed<T>;
  detail::for_each_pair<rt<T, R, C, L>>([&](int i, int j, int p, layout::Coord x, layout::Coord y) {
    if constexpr (rt<T, R, C, L>::row_major) {
      d.at(i, j, p) = *reinterpret_cast<const P*>(src + x.row * ld + x.col);
    } else {
      d.at(i, j, p) = P{src[x.row * ld + x.col], src[y.row * ld + y.col]};
    }
  });
}

namespace detail {

// Registers -> global memory, the rows `keep(row)` picks.
template <class T, int R, int C, class L, class Keep>
__device__ __forceinline__ void store_rows(T* dst, const rt<T, R, C, L>& s, int ld, Keep keep) {
  using P = packed<T>;
  for_each_pair<rt<T, R, C, L>>([&](int i, int j, int p, layout::Coord x, layout::Coord y) {
    if constexpr (rt<T, R, C, L>::row_major) {
      if (keep(x.row)) *reinterpret_cast<P*>(dst + x.row * ld + x.col) = s.at(i, j, p);
    } else {
      if (keep(x.row)) dst[x.row * ld + x.col] = s.at(i, j, p).x;
      if (keep(y.row)) dst[y.row * ld + y.col] = s.at(i, j, p).y;
    }
  });
}

// Register vector -> N contiguous elements, the entries `keep(entry)` picks.
template <class T, int N, class L, class Keep>
__device__ __forceinline__ void store_entries(T* dst, const rv<T, N, L>& v, Keep keep) {
  const int lane = lane_id();
  const bool writer = L::value == layout::RvLayout::group ? layout::thread_in_group(lane) == 0
                                                          : layout::group_of(lane) == 0;
  if (!writer) return;
#pragma unroll
  for (int s = 0; s < rv<T, N, L>::pairs; ++s) {
    const int x = layout::rv_entry(lane, 2 * s, L::value), y = layout::rv_entry(lane, 2 * s + 1, L::value);
    if (keep(x)) dst[x] = v.data[s].x;
    if (keep(y)) dst[y] = v.data[s].y;
  }
}

}  // namespace detail

// Registers -> global memory.
template <class T, int R, int C, class L>
__device__ __forceinline__ void store(T* dst, const rt<T, R, C, L>& s, int ld) {
  detail::store_rows(dst, s, ld, [](int) { return true; });
}

// Registers -> global memory, rows at and beyond `valid_rows` left untouched: a tile that runs
// past the end of a tensor whose length is not a multiple of the tile's.
template <class T, int R, int C, class L>
__device__ __forceinline__ void store(T* dst, const rt<T, R, C, L>& s, int ld, int valid_rows) {
  detail::store_rows(dst, s, ld, [=](int row) { return row < valid_rows; });
}

// Shared tile -> registers: the R x C block of the tile from (row0, col0) on (multiples of 16;
// the whole tile by default). The caller makes the tile's writes visible first (__syncwarp,
// __syncthreads or a barrier).
template <class T, int SR, int SC, int R, int C, class L>
__device__ __forceinline__ void load(rt<T, R, C, L>& d, const st<T, SR, SC>& s, int row0 = 0, int col0 = 0) {
  static_assert(R <= SR && C <= SC, "warp::load: the register tile must fit in the shared tile");
  using RT = rt<T, R, C, L>;
  using ST = st<T, SR, SC>;
  using P = packed<T>;
  if constexpr (sizeof(T) == 2) {
    const layout::Coord row = layout::ldmatrix_row(detail::lane_id(), L::value);
    const std::uint32_t base = arch::shared_address(&s);
#pragma unroll
    for (int i = 0; i < RT::subtile_rows; ++i)
#pragma unroll
      for (int j = 0; j < RT::subtile_cols; ++j) {
        std::uint32_t r[4];
        arch::ldmatrix_x4<!RT::row_major>(r, base + ST::offset(row0 + 16 * i + row.row, col0 + 16 * j + row.col));
#pragma unroll
        for (int p = 0; p < layout::kPairsPerSubtile; ++p) d.at(i, j, p) = from_bits<P>(r[p]);
      }
  } else {
    detail::for_each_pair<RT>([&](int i, int j, int p, layout::Coord x, layout::Coord y) {
      if constexpr (RT::row_major) {
        d.at(i, j, p) = *reinterpret_cast<const P*>(s.data + ST::offset(row0 + x.row, col0 + x.col));
      } else {
        d.at(i, j, p) = P{s(row0 + x.row, col0 + x.col), s(row0 + y.row, col0 + y.col)};
      }
    });
  }
}

// Registers -> the R x C block of a shared tile from (row0, col0) on (as for load). The caller
// syncs before others read it.
template <class T, int SR, int SC, int R, int C, class L>
__device__ __forceinline__ void store(st<T, SR, SC>& d, const rt<T, R, C, L>& s, int row0 = 0, int col0 = 0) {
  static_assert(R <= SR && C <= SC, "warp::store: the register tile must fit in the shared tile");
  using RT = rt<T, R, C, L>;
  using ST = st<T, SR, SC>;
  if constexpr (sizeof(T) == 2) {
    const layout::Coord row = layout::ldmatrix_row(detail::lane_id(), L::value);
    const std::uint32_t base = arch::shared_address(&d);
#pragma unroll
    for (int i = 0; i < RT::subtile_rows; ++i)
#pragma unroll
      for (int j = 0; j < RT::subtile_cols; ++j) {
        const std::uint32_t r[4] = {bits(s.at(i, j, 0)), bits(s.at(i, j, 1)),
                                    bits(s.at(i, j, 2)), bits(s.at(i, j, 3))};
        arch::stmatrix_x4<!RT::row_major>(base + ST::offset(row0 + 16 * i + row.row, col0 + 16 * j + row.col), r);
      }
  } else {
    detail::for_each_pair<RT>([&](int i, int j, int p, layout::Coord x, layout::Coord y) {
      if constexpr (RT::row_major) {
        *reinterpret_cast<packed<T>*>(d.data + ST::offset(row0 + x.row, col0 + x.col)) = s.at(i, j, p);
      } else {
        d(row0 + x.row, col0 + x.col) = s.at(i, j, p).x;
        d(row0 + y.row, col0 + y.col) = s.at(i, j, p).y;
      }
    });
  }
}

// Register vector <-> N contiguous elements (global memory, or a shared vector's data): every
// lane reads the entries it holds; of the lanes that hold the same entries (the 4 of a group
// for group_vl, the 8 groups for quad_vl) one writes them.
template <class T, int N, class L>
__device__ __forceinline__ void load(rv<T, N, L>& d, const T* src) {
  const int lane = detail::lane_id();
#pragma unroll
  for (int s = 0; s < rv<T, N, L>::pairs; ++s) {
    d.data[s] = packed<T>{src[layout::rv_entry(lane, 2 * s, L::value)], src[layout::rv_entry(lane, 2 * s + 1, L::value)]};
  }
}

template <class T, int N, class L>
__device__ __forceinline__ void store(T* dst, const rv<T, N, L>& v) {
  detail::store_entries(dst, v, [](int) { return true; });
}

// Entries at and beyond `valid` left untouched (a vector past the end of a tensor).
template <class T, int N, class L>
__device__ __forceinline__ void store(T* dst, const rv<T, N, L>& v, int valid) {
  detail::store_entries(dst, v, [=](int entry) { return entry < valid; });
}

template <class T, int N, class L>
__device__ __forceinline__ void load(rv<T, N, L>& d, const sv<T, N>& s) {
  load(d, s.data);
}
template <class T, int N, class L>
__device__ __forceinline__ void store(sv<T, N>& d, const rv<T, N, L>& v) {
  store(d.data, v);
}

}  // namespace tk::warp
