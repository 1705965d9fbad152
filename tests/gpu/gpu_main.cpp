// GPU tests' main: without a GPU, exit 77 (ctest: skipped) and say why.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf("skipped: no CUDA device (%s)\n", status != cudaSuccess ? cudaGetErrorString(status) : "0 devices");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
