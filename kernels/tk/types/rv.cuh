#pragma once
// rv<T, N, L>: a warp's register vector of N entries (N a multiple of 16), laid out to line up
// with a register tile's rows or columns (tk/layout/rt_layout.hpp): group_vl holds the entries
// a lane's g picks (g and g+8 of every 16: pair s = {16s + g, 16s + g + 8}), the rows of a row_l
// tile and the columns of a col_l one; quad_vl those its t picks (pair 2s + q = {16s + 8q + 2t,
// +1}), the columns of a row_l tile and the rows of a col_l one. Entries are replicated across
// the lanes that own the same rows (columns). rt<...>::row_vec and ::col_vec name the matching
// types.
#include <type_traits>

#include "tk/layout/rt_layout.hpp"
#include "tk/types/packed.cuh"

namespace tk {

struct group_vl {
  static constexpr layout::RvLayout value = layout::RvLayout::group;
};
struct quad_vl {
  static constexpr layout::RvLayout value = layout::RvLayout::quad;
};

// The layout tag of a layout::RvLayout.
template <layout::RvLayout V>
using vec_layout_of = std::conditional_t<V == layout::RvLayout::group, group_vl, quad_vl>;

template <class T, int N, class L = group_vl>
struct rv {
  static_assert(N > 0 && N % layout::kSubtile == 0, "rv<T, N>: N must be a positive multiple of 16");
  using element = T;
  using pair = packed<T>;
  using vec_layout = L;
  template <class U>
  using like = rv<U, N, L>;  // the same shape holding U
  static constexpr int length = N;
  static constexpr int pairs = N / layout::kSubtile * layout::rv_pairs_per_16(L::value);  // per lane

  pair data[pairs];
};

}  // namespace tk
