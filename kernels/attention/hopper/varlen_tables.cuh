#pragma once
// What the packed-batch launchers (../attention_hopper_varlen.cu, ../attention_hopper_varlen_backward.cu)
// share: each sequence's tensor maps, the tables they and the items go in (one device allocation,
// copied once, before any launch), and zeroing a sequence's rows.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/attention/attention.hpp"
#include "tk/types/gl.cuh"

namespace attention::hopper {

// Rows [first, first + rows) of a packed tensor at `at` as a grid of one batch of `heads` matrices
// of rows x D: the TMA's edges are the sequence's.
template <class ST>
tk::grid_map sequence_map(const typename ST::element* data, std::int64_t first, int rows, int heads, int head_dim,
                          PackedStrides at) {
  const auto row = std::uint64_t(at.row);
  return tk::tma_map<ST>(data + first * at.row, std::uint64_t(rows), std::uint64_t(head_dim), std::uint64_t(heads), 1,
                         {row, std::uint64_t(at.head), row * std::uint64_t(rows)});  // the batch stride: never stepped
}

// Host arrays gathered into one block of device memory: add() each (its offset returned), then
// upload() once; the block lives as long as its last holder.
class DeviceTables {
 public:
  template <class T>
  std::size_t add(const std::vector<T>& items) {
    constexpr std::size_t kAlign = 256;
    const std::size_t at = (host_.size() + kAlign - 1) / kAlign * kAlign;
    host_.resize(at + items.size() * sizeof(T));
    if (!items.empty()) std::memcpy(host_.data() + at, items.data(), items.size() * sizeof(T));
    return at;
  }
  // A failure names the pass (`what`) and what could not be done.
  std::shared_ptr<std::byte> upload(const std::string& what) const {
    void* p = nullptr;
    const std::size_t bytes = std::max<std::size_t>(host_.size(), 1);
    if (const cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess) {
      throw std::runtime_error(what + ": cannot allocate " + std::to_string(bytes) +
                               " bytes for its tables: " + cudaGetErrorString(e));
    }
    std::shared_ptr<std::byte> device(static_cast<std::byte*>(p), [](std::byte* q) { cudaFree(q); });
    if (const cudaError_t e = cudaMemcpy(p, host_.data(), host_.size(), cudaMemcpyHostToDevice); e != cudaSuccess) {
      throw std::runtime_error(what + ": copying its tables: " + cudaGetErrorString(e));
    }
    return device;
  }

 private:
  std::vector<std::byte> host_;
};

// The block's threads zero rows r of a packed tensor at `at` (every head, the whole head dim).
__device__ inline void zero_rows(__nv_bfloat16* x, RowRange r, int heads, int head_dim, PackedStrides at) {
  const std::int64_t row_elements = std::int64_t(heads) * head_dim;
  for (std::int64_t i = threadIdx.x; i < r.count * row_elements; i += blockDim.x) {
    const std::int64_t row = r.first + i / row_elements, head = i % row_elements / head_dim, d = i % head_dim;
    x[row * at.row + head * at.head + d] = __float2bfloat16(0.0f);
  }
}

}  // namespace attention::hopper
