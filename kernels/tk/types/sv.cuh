#pragma once
// sv<T, N>: a shared-memory vector of N elements (N a multiple of 16), e.g. a row's running max.
#include "tk/types/st.cuh"

namespace tk {

template <class T, int N>
struct alignas(16) sv {
  static_assert(N % kTileUnit == 0, "sv<T, N>: N must be a multiple of 16");
  using element = T;
  static constexpr int length = N;
  static constexpr int bytes = N * int(sizeof(T));
  __device__ T& operator[](int i) { return data[i]; }
  __device__ const T& operator[](int i) const { return data[i]; }
  T data[N];
};

}  // namespace tk
