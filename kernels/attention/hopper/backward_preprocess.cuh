#pragma once
// The backward's first kernel: per query row, D = rowsum(dO * O) (in fp32 from the bf16 O the
// forward stored, as FlashAttention-2 does: dS = P (dP - D) then vanishes exactly where the
// softmax rows sum to one) and LSE log2(e), into the padded scratch; pad rows get D = 0 and
// lse2 = +inf, so P = 0 there, as rows that attend no key have already (the forward stored O = 0
// and LSE = +inf for them: ../mask.hpp). On the reducing path it also zeroes the fp32 dQ accumulator
// (batch x heads x padded(seq) x D floats, D per row it takes: in place of a cudaMemsetAsync, one
// launch fewer).
#include <cmath>

#include "kernels/attention/hopper/backward_config.cuh"

namespace attention::hopper::backward {

// kPrepLanes<D> lanes per row, each reading 8 columns of dO and of O as one 16-byte load (rows
// start 16-byte aligned: the TMA's stride rule), so a warp holds 32 / kPrepLanes<D> rows at a
// time; the grid strides over all batch x heads x padded(seq) rows (Rows: where each lies). A warp per row read 4 bytes
// (D = 64) or 8 bytes (D = 128) per lane and ran at 1.1 and 2.1 TB/s on the H200 (ncu). On the
// reducing path each lane also zeroes its 8 columns of the accumulator.
template <int D, class Rows = DenseRows>
__global__ void __launch_bounds__(kPrepThreads)
    preprocess_kernel(const bf16* __restrict__ o, RowStrides o_at, const bf16* __restrict__ d_o, RowStrides d_o_at,
                      const float* __restrict__ lse, Rows at, Problem p) {
  constexpr int lanes = kPrepLanes<D>, rows_per_block = kPrepRowsPerBlock<D>;
  const int heads = p.schedule.heads, column0 = threadIdx.x % lanes * kPrepColumnsPerLane;
  const std::size_t rows = std::size_t(p.schedule.batch) * heads * padded(p.schedule.seq);
  // rows is a multiple of rows_per_block (kRowPad is), so a warp's rows are all in the loop or all
  // out of it: the shuffles below see every lane.
  for (std::size_t g = std::size_t(blockIdx.x) * rows_per_block + threadIdx.x / lanes; g < rows;
       g += std::size_t(gridDim.x) * rows_per_block) {
    const QueryRow q = at.at(g);
    float dot = 0;
    if (q.real()) {
      const uint4 x = *reinterpret_cast<const uint4*>(o + o_at.at(q.matrix, heads, q.row) + column0);
      const uint4 y = *reinterpret_cast<const uint4*>(d_o + d_o_at.at(q.matrix, heads, q.row) + column0);
      const auto* x2 = reinterpret_cast<const __nv_bfloat162*>(&x);
      const auto* y2 = reinterpret_cast<const __nv_bfloat162*>(&y);
#pragma unroll
      for (int i = 0; i < kPrepColumnsPerLane / 2; ++i) {
        const float2 a = __bfloat1622float2(x2[i]), b = __bfloat1622float2(y2[i]);
        dot = fmaf(a.x, b.x, fmaf(a.y, b.y, dot));
      }
    }
    if (p.dq_accumulator != nullptr) {
      auto* zeros = reinterpret_cast<float4*>(p.dq_accumulator + g * D + column0);
      zeros[0] = zeros[1] = make_float4(0, 0, 0, 0);
    }
    for (int m = lanes / 2; m > 0; m /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, m);
    if (column0 == 0) {
      p.delta[g] = dot;
      p.lse2[g] = q.real() ? lse[std::size_t(q.matrix) * at.lse_rows() + q.row] * float(M_LOG2E) : INFINITY;
    }
  }
}

}  // namespace attention::hopper::backward
