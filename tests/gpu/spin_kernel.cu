#include "src/errors.hpp"
#include "tests/gpu/spin_kernel.hpp"

namespace tkprobe::test_kernels {
namespace {

__global__ void spin_kernel(std::uint64_t cycles, ClockWindow* clock) {
  const ClockStamp begin = clock_stamp();
  while (sm_cycles() - begin.cycles < cycles) {
  }
  *clock = ClockWindow{begin, clock_stamp()};
}

}  // namespace

void launch_spin(std::uint64_t cycles, ClockWindow* clock, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(cycles, clock);
  TK_CUDA(cudaGetLastError());
}

}  // namespace tkprobe::test_kernels
