#pragma once
// The tensor maps both Hopper passes read their (B, H, N, D) tensors through: a grid of N x D
// matrices, [batch][heads], at the tensor's own strides (attention::Strides), so a transposed
// view is read in place. Kernels name matrix b * heads + h, as the contiguous layout orders them.
// `rows`: the queries' count for Q, O and their gradients, the keys' for K, V and theirs.
#include <cstdint>

#include "kernels/attention/attention.hpp"
#include "tk/types/gl.cuh"

namespace attention::hopper {

template <class ST>
tk::grid_map tensor_map(const typename ST::element* data, Shape s, int heads, int rows, Strides at) {
  return tk::tma_map<ST>(data, std::uint64_t(rows), std::uint64_t(s.head_dim), std::uint64_t(heads),
                         std::uint64_t(s.batch),
                         {std::uint64_t(at.seq), std::uint64_t(at.head), std::uint64_t(at.batch)});
}

// The map an item's tiles of a tensor come from: the batch's, or (a packed batch, ../varlen.hpp)
// its sequence's.
__device__ inline const tk::grid_map& map_of(const tk::grid_map& batch, int) { return batch; }
__device__ inline const tk::grid_map& map_of(const tk::grid_map* sequences, int seq) { return sequences[seq]; }

}  // namespace attention::hopper
