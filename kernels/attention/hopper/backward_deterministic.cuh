#pragma once
// The deterministic path's dK/dV items (backward_dkdv.cuh) and dQ items (backward_dq.cuh), in one
// launch or two (kOneLaunch). In one, blocks 0 .. kv_items - 1 take the dK/dV items and the rest
// the dQ items; blocks start in index order, so dQ items fill the SMs that the dK/dV items' last
// wave leaves idle, where two launches each end on a wave with nothing beside it. Both kinds take
// the same threads and register split.
#include <algorithm>

#include "kernels/attention/hopper/backward_dkdv.cuh"
#include "kernels/attention/hopper/backward_dq.cuh"

namespace attention::hopper::backward {

// Measured on the H200 in turns against two launches (results/NOTES.md, eleventh session): one
// took D = 64 from 34-44% to 35-47% of the clock peak (+2.8 to +6.7%), but D = 128 from 53.9% to
// 52.4% at N = 16384 causal and 0.6-1.6% lower at N = 4096: D = 128 keeps two launches.
template <int D>
constexpr bool kOneLaunch = D == 64;

enum class Items { dkdv, dq, both };  // which items a launch takes

template <int D>
constexpr int kBothSmemBytes = std::max(kKvSmemBytes<D>, kQSmemBytes<D>);

template <int D, Items Take>
__global__ void __launch_bounds__(KvConfig<D>::threads, 1)
    deterministic_kernel(const __grid_constant__ KvMaps kv_maps, const __grid_constant__ QMaps q_maps, const Problem p) {
  static_assert(KvConfig<D>::threads == QConfig<D>::threads, "one block shape for both kinds of item");
  extern __shared__ std::uint8_t raw[];
  const int kv_blocks = Take == Items::dq ? 0 : Take == Items::dkdv ? int(gridDim.x) : kv_items(p.schedule);
  if (int(blockIdx.x) < kv_blocks) {
    if constexpr (Take != Items::dq) dkdv_block<D, false>(aligned_smem<KvSmem<D>>(raw), kv_maps, p, blockIdx.x);
  } else {
    if constexpr (Take != Items::dkdv) dq_block<D>(aligned_smem<QSmem<D>>(raw), q_maps, p, blockIdx.x - kv_blocks);
  }
}

}  // namespace attention::hopper::backward
