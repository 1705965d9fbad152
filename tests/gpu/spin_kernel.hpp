#pragma once
// A kernel that runs for a known number of SM cycles, for testing the harness's timing.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/kernel_clock.cuh"

namespace tkprobe::test_kernels {

// One block spins for `cycles` SM cycles and stamps `clock` around the spin.
void launch_spin(std::uint64_t cycles, ClockWindow* clock, cudaStream_t stream);

}  // namespace tkprobe::test_kernels
