#pragma once
// V^T for the e4m3 forward (config_fp8.cuh): wgmma reads 8-bit B operands K-major only, and in
// O += P V the K index is the key, so V ([matrix][N][D], keys down) is rewritten as V^T
// ([matrix][D][N padded to kBlockKV], keys along), each 32 keys in the order layout::p8_key gives,
// the order P's registers hold them in (warp::copy_e4m3). Keys from N to the padding are zeros: P
// is 0 there, and 0 x a NaN left in memory would not be.
//
// Why a kernel of its own before the forward, not a transpose inside it: it is simple, it keeps
// the producer a pure TMA stream, and its cost is one pass over V (read B Hkv N D bytes, write as
// many): against the forward's 4 B H N^2 D FLOPs at R FLOP/s, with HBM at W bytes/s, about
// R / (2 N W) (H / Hkv) of it, ~150 / N at 1.2 PFLOP/s and 4 TB/s: 15% at N = 1024 (less where V
// stays in L2), 4% at 4096, 1% at 16384, less again with GQA. Fp8Forward launches both, so the
// probe's rates include it. An in-kernel transpose (ldmatrix.trans on 16-bit pairs, byte
// permutes, stmatrix, by producer warps between the TMA and the consumers) saves that pass but
// costs producer registers and a shared-memory round trip per V tile: worth trying on the H200.
#include <cstdint>

#include "kernels/attention/hopper/config.cuh"
#include "tk/layout/fragments.hpp"

namespace attention::hopper {

constexpr int kTransposeKeys = 64;      // keys per block
constexpr int kTransposeThreads = 256;

// Keys padded to whole key tiles: V^T's row length.
constexpr int vt_pitch(int seq) { return (seq + kBlockKV - 1) / kBlockKV * kBlockKV; }

// One block: keys [k0, k0 + 64) of matrix blockIdx.y, all D columns, through shared memory.
template <int D>
__global__ void __launch_bounds__(kTransposeThreads) transpose_v_kernel(const std::uint8_t* v, std::uint8_t* vt, int seq) {
  constexpr int kChunks = D / 16;  // 16-byte chunks per key row
  __shared__ alignas(16) std::uint8_t tile[kTransposeKeys][D + 16];  // +16: rows start 4 banks apart
  const int k0 = blockIdx.x * kTransposeKeys, pitch = vt_pitch(seq);
  const std::uint8_t* src = v + std::size_t(blockIdx.y) * seq * D;
  for (int i = threadIdx.x; i < kTransposeKeys * kChunks; i += kTransposeThreads) {
    const int r = i / kChunks, c = i % kChunks;
    uint4 x = {0, 0, 0, 0};
    if (k0 + r < seq) x = *reinterpret_cast<const uint4*>(src + std::size_t(k0 + r) * D + 16 * c);
    *reinterpret_cast<uint4*>(&tile[r][16 * c]) = x;
  }
  __syncthreads();
  std::uint8_t* dst = vt + std::size_t(blockIdx.y) * D * pitch + k0;
  constexpr int kWords = kTransposeKeys / 4;  // 4-byte words per output row
  for (int i = threadIdx.x; i < D * kWords; i += kTransposeThreads) {
    const int d = i / kWords, c = 4 * (i % kWords);
    std::uint32_t word = 0;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const int key = (c + b) / 32 * 32 + tk::layout::p8_key((c + b) % 32);
      word |= std::uint32_t(tile[key][d]) << (8 * b);
    }
    *reinterpret_cast<std::uint32_t*>(dst + std::size_t(d) * pitch + c) = word;
  }
}

}  // namespace attention::hopper
