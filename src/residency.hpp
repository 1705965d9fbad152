#pragma once
// How many blocks of a kernel share an SM, set on purpose: dynamic shared memory padded so
// that no more than the requested number fit, and the occupancy API's word on what then runs.
// The tensor-core probes use it to fix warps per SM; the occupancy probe sweeps it.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>

#include "src/device.hpp"
#include "src/kernel_clock.cuh"

namespace tkprobe {

struct Residency {
  int blocks_per_sm = 0;       // what the occupancy API says fits with this padding
  int warps_per_sm = 0;
  double occupancy = 0;        // resident warps / the SM's maximum
  std::size_t dynamic_smem = 0;
  int registers_per_thread = 0;
};

// Pads `kernel`'s dynamic shared memory (at least `needed_smem`) so that at most
// `blocks_per_sm` blocks of `block_threads` threads fit on an SM, raises the kernel's dynamic
// limit to it, and reports the residency the occupancy API then gives (fewer blocks when
// registers or threads run out first).
Residency plan_residency(const void* kernel, int block_threads, int blocks_per_sm, std::size_t needed_smem,
                         const DeviceInfo& device);

// Blocks that truly ran at the same time on one SM: the most that overlapped on each SM, least
// over the SMs used. Below what the occupancy API promised, the launch ran in more than one wave.
int concurrent_blocks_per_sm(std::span<const BlockSpan> spans);

// Launches a kernel whose one parameter is `params` (a struct passed by value).
void launch_kernel(const void* kernel, int blocks, int block_threads, std::size_t smem, void* params,
                   cudaStream_t stream);

}  // namespace tkprobe
