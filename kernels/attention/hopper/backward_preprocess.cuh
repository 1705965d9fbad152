#pragma once
// The backward's first kernel: per query row, D = rowsum(dO * O) (in fp32 from the bf16 O the
// forward stored, as FlashAttention-2 does: dS = P (dP - D) then vanishes exactly where the
// softmax rows sum to one) and LSE log2(e), into the padded scratch; pad rows get D = 0 and
// lse2 = +inf, so P = 0 there. On the reducing path it also zeroes the fp32 dQ accumulator
// (batch x heads x padded(seq) x D floats: a warp zeroes D of them per row it takes, in place of a
// cudaMemsetAsync, one launch fewer).
#include <cmath>

#include "kernels/attention/hopper/backward_config.cuh"

namespace attention::hopper::backward {

// A warp per row, striding over all batch x heads x padded(seq) rows (a grid of any size):
// each lane reads D / 32 elements of dO and O, as bf16 pairs (and zeroes D / 32 floats of the
// accumulator, as float4s from D / 4 lanes).
template <int D>
__global__ void __launch_bounds__(kPrepThreads)
    preprocess_kernel(const bf16* __restrict__ o, RowStrides o_at, const bf16* __restrict__ d_o, RowStrides d_o_at,
                      const float* __restrict__ lse, Problem p) {
  constexpr int kPairsPerLane = D / 2 / 32;
  const int seq = p.schedule.seq, lane = threadIdx.x % 32;
  const std::size_t rows = std::size_t(p.schedule.batch) * p.schedule.heads * padded(seq);
  for (std::size_t g = std::size_t(blockIdx.x) * kPrepWarps + threadIdx.x / 32; g < rows;
       g += std::size_t(gridDim.x) * kPrepWarps) {
    const int qm = int(g / padded(seq)), r = int(g % padded(seq));
    float dot = 0;
    if (r < seq) {
      const int heads = p.schedule.heads;
      const auto* o2 = reinterpret_cast<const __nv_bfloat162*>(o + o_at.at(qm, heads, r));
      const auto* d_o2 = reinterpret_cast<const __nv_bfloat162*>(d_o + d_o_at.at(qm, heads, r));
#pragma unroll
      for (int i = 0; i < kPairsPerLane; ++i) {
        const float2 x = __bfloat1622float2(o2[lane + 32 * i]), y = __bfloat1622float2(d_o2[lane + 32 * i]);
        dot = fmaf(x.x, y.x, fmaf(x.y, y.y, dot));
      }
    }
    if (p.dq_accumulator != nullptr && lane < D / 4) {
      reinterpret_cast<float4*>(p.dq_accumulator + g * D)[lane] = make_float4(0, 0, 0, 0);
    }
    for (int m = 16; m > 0; m /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, m);
    if (lane == 0) {
      p.delta[g] = dot;
      p.lse2[g] = r < seq ? lse[std::size_t(qm) * seq + r] * float(M_LOG2E) : INFINITY;
    }
  }
}

}  // namespace attention::hopper::backward
