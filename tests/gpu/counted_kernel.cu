#include "src/errors.hpp"
#include "tests/gpu/counted_kernel.hpp"

namespace tkprobe::test_kernels {
namespace {

__global__ void counted_kernel(int trips, unsigned* out) {
  // Seeds from the thread and the runtime trip count, so nothing is known at compile time.
  unsigned x = threadIdx.x + static_cast<unsigned>(trips);
  const unsigned c = static_cast<unsigned>(trips) | 1u;
#pragma unroll 1
  for (int t = 0; t < trips; ++t) {
#pragma unroll
    for (int s = 0; s < kStepsPerTrip; ++s) x = x * x + c;
  }
  out[threadIdx.x] = x;
}

}  // namespace

void launch_counted(int trips, unsigned* out, cudaStream_t stream) {
  counted_kernel<<<1, 32, 0, stream>>>(trips, out);
  TK_CUDA(cudaGetLastError());
}

}  // namespace tkprobe::test_kernels
