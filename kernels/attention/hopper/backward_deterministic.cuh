#pragma once
// The deterministic path's dK/dV items (backward_dkdv.cuh) and dQ items (backward_dq.cuh) in one
// launch: blocks 0 .. kv_items - 1 take the dK/dV items and the rest the dQ items. Blocks start
// in index order, so dQ items fill the SMs that the dK/dV items' last wave leaves idle, where two
// launches each end on a wave with nothing beside it. Both kinds take the same threads and
// register split, and the larger of their shared memories.
// Measured in turns against two launches: docs/decisions/018-backward-one-launch.md.
#include <algorithm>

#include "kernels/attention/hopper/backward_dkdv.cuh"
#include "kernels/attention/hopper/backward_dq.cuh"

namespace attention::hopper::backward {

template <int D>
constexpr int kDeterministicSmemBytes = std::max(kKvSmemBytes<D>, kQSmemBytes<D>);

// KM, QM: KvMaps and QMaps, or a packed batch's VarlenKvMaps and VarlenQMaps.
template <int D, class KM = KvMaps, class QM = QMaps>
__global__ void __launch_bounds__(KvConfig<D>::threads, 1)
    deterministic_kernel(const __grid_constant__ KM kv_maps, const __grid_constant__ QM q_maps, const Problem p) {
  static_assert(KvConfig<D>::threads == QConfig<D>::threads, "one block shape for both kinds of item");
  extern __shared__ std::uint8_t raw[];
  const int kv_blocks = kv_item_count(kv_maps, p);
  if (int(blockIdx.x) < kv_blocks) {
    dkdv_block<D, false>(aligned_smem<KvSmem<D>>(raw), kv_maps, p, blockIdx.x);
  } else {
    dq_block<D>(aligned_smem<QSmem<D>>(raw), q_maps, p, blockIdx.x - kv_blocks);
  }
}

}  // namespace attention::hopper::backward
