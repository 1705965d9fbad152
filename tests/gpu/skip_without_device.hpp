#pragma once
// The GPU test programs' first step: without a CUDA device they say so and exit with the code
// ctest lists as skipped (SKIP_RETURN_CODE in tests/CMakeLists.txt; check_ncu.py passes it on).
#include <cuda_runtime_api.h>

#include <cstdio>

namespace tkprobe::test {

inline constexpr int kSkipped = 77;

// Whether a CUDA device is present; prints "skipped: no CUDA device" where none is.
inline bool have_device() {
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) return true;
  std::printf("skipped: no CUDA device\n");
  return false;
}

}  // namespace tkprobe::test
