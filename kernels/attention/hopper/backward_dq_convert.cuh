#pragma once
// The reducing path's last kernel (backward_config.cuh): dQ = scale x the fp32 accumulator the
// dK/dV items reduced into (../backward_schedule.hpp), in bf16 at dQ's strides. A thread per float4
// of the accumulator, read in its order (coalesced): two rows' pair of columns each, written as
// bf16 pairs; pad rows are not written (Rows: where each row lies). Queries that attend no
// key get 0: the dK/dV items add only 0 (masked scores) into their rows, if anything.
#include "kernels/attention/hopper/backward_config.cuh"

namespace attention::hopper::backward {

inline constexpr int kConvertThreads = 256;
inline constexpr int kConvertMaxBlocks = 1 << 16;  // the grid strides beyond

template <int D, class Rows = DenseRows>
__global__ void __launch_bounds__(kConvertThreads)
    dq_convert_kernel(const Problem p, bf16* dq, RowStrides dq_at, Rows at) {
  const int heads = p.schedule.heads;
  const std::size_t float4s = dq_accumulator_floats(p.schedule.batch, heads, p.schedule.seq, D) / 4;
  const auto* acc = reinterpret_cast<const float4*>(p.dq_accumulator);
  for (std::size_t i = std::size_t(blockIdx.x) * kConvertThreads + threadIdx.x; i < float4s;
       i += std::size_t(gridDim.x) * kConvertThreads) {
    const std::size_t part_index = i * 4 / kDqPartFloats;  // over (qm, tile, part)
    const int part = int(part_index % dq_parts(D));
    const DqElement top = dq_element(int(i * 4 % kDqPartFloats));  // floats 0, 1: row r; 2, 3: row r + 8
    // Row r's place; r + 8 lies in the same block of kRowPad rows (a tile of kDqTileQ does).
    const QueryRow q = at.at(part_index / dq_parts(D) * kDqTileQ + top.row);
    const int col = part * kDqCols + top.col;
    const float4 v = acc[i];
    const float2 rows[2] = {{v.x, v.y}, {v.z, v.w}};
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (q.queries_left <= 8 * h) continue;
      *reinterpret_cast<__nv_bfloat162*>(dq + dq_at.at(q.matrix, heads, q.row + 8 * h) + col) =
          __floats2bfloat162_rn(rows[h].x * p.scale, rows[h].y * p.scale);
    }
  }
}

}  // namespace attention::hopper::backward
