#include <algorithm>

#include "kernels/gemm/gemm.hpp"
#include "tk/types/gl.cuh"
#include "tk/warpgroup.cuh"

namespace gemm {
namespace {

using namespace tk;
using bf16 = __nv_bfloat16;

constexpr int kConsumers = 2;  // warpgroups multiplying, 64 rows of C each
constexpr int kStages = 4;
constexpr int kThreads = (1 + kConsumers) * 128;
constexpr int kProducerRegisters = 40, kConsumerRegisters = 232;  // 128 x (40 + 2 x 232) <= 64K
constexpr int kGroupM = 8;  // tiles of M walked before moving along N, so blocks share B in L2

using a_tile = st<bf16, warpgroup::kRows, kBlockK>;  // one consumer's 64 rows x 64 of K
using b_tile = st<bf16, kBlockN, kBlockK>;           // 256 x 64
using c_tile = rt_fl<16, kBlockN>;                   // each warp's 16 rows of C, accumulated
using c_out = rt_bf<16, kBlockN>;                    // and rounded to bf16
constexpr int kStoreCols = kBlockN / 2;              // C leaves through shared memory in two halves
using c_stage = st<bf16, warpgroup::kRows, kStoreCols>;  // one consumer's half-tile on its way out

struct Stage {
  a_tile a[kConsumers];
  b_tile b;
};
struct Smem {
  Stage stage[kStages];
  c_stage c[kConsumers];
  pipeline<kStages> pipe;
};
constexpr std::uint32_t kStageBytes = kConsumers * tma::bytes<a_tile>() + tma::bytes<b_tile>();
constexpr int kSmemBytes = sizeof(Smem) + kSmemAlign;  // room to align the ring
static_assert(kSmemBytes <= kMaxSmemBytes, "the ring and the staging tiles must fit");

struct Maps {
  CUtensorMap a, b, c;
};

// Block `block`'s tile of C: kGroupM tiles down M, then the next column of tiles.
__device__ int2 tile_of(int block, Shape s) {
  const int tiles_m = s.m / kBlockM, per_group = kGroupM * (s.n / kBlockN);
  const int first_m = block / per_group * kGroupM, group_rows = min(tiles_m - first_m, kGroupM);
  return {first_m + block % per_group % group_rows, block % per_group / group_rows};
}

// Consumer w's 64 x 256 of C leaves as two 64 x 128 TMA stores through its staging tile, so the
// consumer goes back to multiplying as soon as the second half is in shared memory.
__device__ void store_tile(c_stage& staging, const CUtensorMap& map, c_out& out, int row_tile, int col_tile, int w) {
#pragma unroll
  for (int half = 0; half < kBlockN / kStoreCols; ++half) {
    warpgroup::store_async(map, staging, column_slice<kStoreCols>(out, half), row_tile,
                           col_tile * (kBlockN / kStoreCols) + half, 1 + w);
  }
}

// Persistent: each block walks tiles blockIdx.x, + gridDim.x, ...; the ring's step count runs on
// across tiles, so the producer fills the next tile's stages while the consumers store this one.
__global__ void __launch_bounds__(kThreads, 1) gemm_kernel(const __grid_constant__ Maps maps, Shape s) {
  extern __shared__ std::uint8_t raw[];
  Smem& sm = aligned_smem<Smem>(raw);
  const int tiles = (s.m / kBlockM) * (s.n / kBlockN), steps = s.k / kBlockK;
  if (threadIdx.x == 0) sm.pipe.init(kConsumers * 4);  // every consumer warp releases a stage
  __syncthreads();

  if (warpgroup::index() == 0) {  // the producer: one thread feeds the ring
    warpgroup::decrease_registers<kProducerRegisters>();
    if (warpgroup::thread() != 0) return;
    for (int t = blockIdx.x, step = 0; t < tiles; t += gridDim.x) {
      const int2 tile = tile_of(t, s);
      for (int k = 0; k < steps; ++k, ++step) {
        Stage& stage = sm.stage[sm.pipe.stage(step)];
        const std::uint32_t full = sm.pipe.acquire(step, kStageBytes);
        for (int w = 0; w < kConsumers; ++w) tma::load_async(stage.a[w], maps.a, tile.x * kConsumers + w, k, full);
        tma::load_async(stage.b, maps.b, tile.y, k, full);
      }
    }
    return;
  }

  warpgroup::increase_registers<kConsumerRegisters>();  // the consumers: 64 rows of C each
  const int w = warpgroup::index() - 1;
  const bool releaser = threadIdx.x % 32 == 0;
  c_tile acc;
  c_out out;
  for (int t = blockIdx.x, step = 0; t < tiles; t += gridDim.x) {
    const int2 tile = tile_of(t, s);
    warpgroup::mma_fence();  // acc was read by the last tile's store
    for (int k = 0; k < steps; ++k, ++step) {
      sm.pipe.wait_full(step);
      const Stage& stage = sm.stage[sm.pipe.stage(step)];
      warpgroup::mma_ABt(acc, stage.a[w], stage.b, k > 0);
      warpgroup::mma_commit();
      warpgroup::mma_wait<1>();  // the previous step's products are done reading their stage
      if (k > 0 && releaser) sm.pipe.release(step - 1);
    }
    warpgroup::mma_wait<0>();
    if (releaser) sm.pipe.release(step - 1);
    warp::copy(out, acc);
    store_tile(sm.c[w], maps.c, out, tile.x * kConsumers + w, tile.y, w);
  }
  if (warpgroup::thread() == 0) tma::store_wait<0>();  // the shared tile must outlive the store
}

}  // namespace

std::string refusal(Shape s) {
  const auto need = [](const char* name, int v, int tile) {
    return v > 0 && v % tile == 0 ? std::string()
                                  : std::string(name) + " = " + std::to_string(v) + ": give a positive multiple of " +
                                        std::to_string(tile) + " (the kernel's tile)";
  };
  for (const std::string& r : {need("M", s.m, kBlockM), need("N", s.n, kBlockN), need("K", s.k, kBlockK)}) {
    if (!r.empty()) return r;
  }
  return "";
}

Gemm::Gemm(const bf16* a, const bf16* b, bf16* c, Shape s)
    : a_map_(tma_map<a_tile>(a, s.m, s.k)),
      b_map_(tma_map<b_tile>(b, s.n, s.k)),
      c_map_(tma_map<c_stage>(c, s.m, s.n)),
      shape_(s) {
  cudaFuncSetAttribute(gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  int device = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device);
}

void Gemm::operator()(cudaStream_t stream) const {
  const int tiles = (shape_.m / kBlockM) * (shape_.n / kBlockN);
  gemm_kernel<<<std::min(tiles, sms_), kThreads, kSmemBytes, stream>>>(Maps{a_map_, b_map_, c_map_}, shape_);
}

}  // namespace gemm
