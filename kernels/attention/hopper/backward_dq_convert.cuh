#pragma once
// The reducing path's last kernel (backward_config.cuh): dQ = scale x the fp32 accumulator the
// dK/dV items reduced into (../backward_schedule.hpp), in bf16 at dQ's strides. A thread per float4
// of the accumulator, read in its order (coalesced): two rows' pair of columns each, written as
// bf16 pairs; rows past the queries' end (the padding) are not written. Queries that attend no
// key get 0: the dK/dV items add only 0 (masked scores) into their rows, if anything.
#include "kernels/attention/hopper/backward_config.cuh"

namespace attention::hopper::backward {

inline constexpr int kConvertThreads = 256;
inline constexpr int kConvertMaxBlocks = 1 << 16;  // the grid strides beyond

template <int D>
__global__ void __launch_bounds__(kConvertThreads) dq_convert_kernel(const Problem p, DqOut out) {
  const int seq = p.schedule.seq, heads = p.schedule.heads, tiles = padded(seq) / kDqTileQ;
  const std::size_t float4s = dq_accumulator_floats(p.schedule.batch, heads, seq, D) / 4;
  const auto* acc = reinterpret_cast<const float4*>(p.dq_accumulator);
  for (std::size_t i = std::size_t(blockIdx.x) * kConvertThreads + threadIdx.x; i < float4s;
       i += std::size_t(gridDim.x) * kConvertThreads) {
    const std::size_t part_index = i * 4 / kDqPartFloats;  // over (qm, tile, part)
    const int part = int(part_index % dq_parts(D)), tile = int(part_index / dq_parts(D) % tiles);
    const int qm = int(part_index / dq_parts(D) / tiles);
    const DqElement top = dq_element(int(i * 4 % kDqPartFloats));  // floats 0, 1: row r; 2, 3: row r + 8
    const int col = part * kDqCols + top.col;
    const float4 v = acc[i];
    const float2 rows[2] = {{v.x, v.y}, {v.z, v.w}};
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = tile * kDqTileQ + top.row + 8 * h;
      if (r >= seq) continue;
      const std::size_t at = std::size_t(qm / heads * out.batch + qm % heads * out.head + r * out.seq) + col;
      *reinterpret_cast<__nv_bfloat162*>(out.dq + at) =
          __floats2bfloat162_rn(rows[h].x * p.scale, rows[h].y * p.scale);
    }
  }
}

}  // namespace attention::hopper::backward
