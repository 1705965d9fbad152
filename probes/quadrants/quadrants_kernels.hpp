#pragma once
// The quadrants probe's kernel (quadrants_kernels.cu): one block per SM of `warps` warps, each
// thread running kChains independent FFMA chains, so one warp can issue an FFMA every cycle and
// only the number of sub-partitions (quadrants) its block's warps occupy limits the SM.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/kernel_clock.cuh"

namespace tkprobe::quadrants {

inline constexpr int kChains = 8;    // independent FFMA chains per thread: more than FFMA's latency in cycles
inline constexpr int kUnroll = 16;   // trips of all chains per loop iteration
inline constexpr int kQuadrants = 4;  // SM sub-partitions, each issuing one warp instruction a cycle
inline constexpr int kLanes = 32;

struct Params {
  long long trips;                 // loop iterations, each kUnroll x kChains FFMA per thread
  ClockWindow* clock;              // block 0: clock64 around every warp's work
  std::uint32_t* warp_slots;       // block 0: %warpid of each warp
  std::uint32_t* sink;             // never written in practice; keeps every FFMA live
};

inline constexpr std::uint32_t kUnreachableNan = 0x7fc00001u;  // a NaN payload arithmetic never makes

const void* fma_kernel();

// FFMA lanes block 0 executed in one launch.
constexpr double fma_lanes(int warps, long long trips) { return double(warps) * kLanes * trips * kUnroll * kChains; }

}  // namespace tkprobe::quadrants
