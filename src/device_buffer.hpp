#pragma once
// An owning device allocation of `count` elements of T (plain cudaMalloc, never managed).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "src/errors.hpp"

namespace tkprobe {

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    TK_CUDA(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return data_; }
  std::size_t size() const { return count_; }

  void upload(const std::vector<T>& host) {
    TK_CUDA(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    TK_CUDA(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  // Fills every byte with `byte`: poisons an output before a kernel writes it.
  void poison(unsigned char byte = 0xff) { TK_CUDA(cudaMemset(data_, byte, count_ * sizeof(T))); }

 private:
  T* data_ = nullptr;
  std::size_t count_;
};

}  // namespace tkprobe
