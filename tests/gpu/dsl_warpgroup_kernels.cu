#include <stdexcept>
#include <type_traits>

#include "src/device_buffer.hpp"
#include "tests/gpu/dsl_warpgroup_kernels.hpp"
#include "tk/arch/mbarrier.cuh"
#include "tk/ops/warpgroup/mma.cuh"
#include "tk/ops/warpgroup/tma.cuh"
#include "tk/types/gl.cuh"
#include "tk/warp.cuh"

namespace tkprobe::test_kernels::dsl_wg {
namespace {

using namespace tk;

template <class Smem>
__device__ Smem& aligned_smem() {
  extern __shared__ std::uint8_t raw[];
  return *reinterpret_cast<Smem*>(raw + (kSmemAlign - arch::shared_address(raw) % kSmemAlign) % kSmemAlign);
}

// Fills a shared tile from a row-major matrix through st::operator() (the layout's own math).
template <class ST>
__device__ void fill(ST& t, const typename ST::element* m) {
  for (int i = threadIdx.x; i < ST::rows * ST::cols; i += blockDim.x) t(i / ST::cols, i % ST::cols) = m[i];
}

template <Mma F, class T, int K, int N>
__global__ void __launch_bounds__(128) mma_kernel(const T* a, const T* b, float* d) {
  constexpr bool b_transposed = F == Mma::ABt_ss || F == Mma::ABt_rs || F == Mma::AtBt_ss;
  constexpr bool a_transposed = F == Mma::AtB_ss || F == Mma::AtBt_ss;
  using a_tile = std::conditional_t<a_transposed, st<T, K, warpgroup::kRows>, st<T, warpgroup::kRows, K>>;
  using b_tile = std::conditional_t<b_transposed, st<T, N, K>, st<T, K, N>>;
  struct Smem {
    a_tile a;
    b_tile b;
  };
  Smem& sm = aligned_smem<Smem>();
  fill(sm.a, a);
  fill(sm.b, b);
  arch::fence_proxy_async();  // written by threads, read by the tensor cores
  __syncthreads();
  const int w = threadIdx.x / 32;
  rt<T, 16, K> a_rows;
  if constexpr (!a_transposed) warp::load(a_rows, a + w * 16 * K, K);
  rt_fl<16, N> acc;
  warpgroup::mma_fence();
  if constexpr (F == Mma::ABt_ss) warpgroup::mma_ABt(acc, sm.a, sm.b, false);
  if constexpr (F == Mma::AB_ss) warpgroup::mma_AB(acc, sm.a, sm.b, false);
  if constexpr (F == Mma::ABt_rs) warpgroup::mma_ABt(acc, a_rows, sm.b, false);
  if constexpr (F == Mma::AB_rs) warpgroup::mma_AB(acc, a_rows, sm.b, false);
  if constexpr (F == Mma::AtB_ss) warpgroup::mma_AtB(acc, sm.a, sm.b, false);
  if constexpr (F == Mma::AtBt_ss) warpgroup::mma_AtBt(acc, sm.a, sm.b, false);
  warpgroup::mma_commit();
  warpgroup::mma_wait<0>();
  warp::store(d + w * 16 * N, acc, N);
}

template <int R, int C>
__global__ void tma_round_trip_kernel(const __grid_constant__ CUtensorMap in, const __grid_constant__ CUtensorMap out,
                                      int row_tile, int col_tile) {
  using tile = st<__nv_bfloat16, R, C>;
  __shared__ alignas(8) std::uint64_t bar;
  tile& t = aligned_smem<tile>();
  if (threadIdx.x != 0) return;
  const std::uint32_t b = arch::shared_address(&bar);
  arch::mbarrier_init(b, 1);
  arch::fence_mbarrier_init();
  arch::mbarrier_arrive_expect_tx(b, tma::bytes<tile>());
  tma::load_async(t, in, row_tile, col_tile, b);
  arch::mbarrier_wait(b, 0);
  tma::store_async(out, t, row_tile, col_tile);
  tma::store_wait<0>();
}

template <Mma F, class T, int K, int N>
std::vector<float> run_mma(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b) {
  DeviceBuffer<std::uint16_t> da(a.size()), db(b.size());
  da.upload(a);
  db.upload(b);
  DeviceBuffer<float> dd(warpgroup::kRows * N);
  dd.poison();
  const auto kernel = mma_kernel<F, T, K, N>;
  const int smem = (warpgroup::kRows * K + K * N) * 2 + 2 * kSmemAlign;
  TK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kernel<<<1, 128, smem>>>(reinterpret_cast<const T*>(da.get()), reinterpret_cast<const T*>(db.get()), dd.get());
  TK_CUDA(cudaGetLastError());
  return dd.download();
}

template <Mma F, class T>
std::vector<float> run_mma(int k, int n, const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b) {
  if (k == kMmaShapes[0][0] && n == kMmaShapes[0][1]) return run_mma<F, T, kMmaShapes[0][0], kMmaShapes[0][1]>(a, b);
  if (k == kMmaShapes[1][0] && n == kMmaShapes[1][1]) return run_mma<F, T, kMmaShapes[1][0], kMmaShapes[1][1]>(a, b);
  throw std::invalid_argument("no mma kernel for this shape");
}

template <Mma F>
std::vector<float> run_mma(Half type, int k, int n, const std::vector<std::uint16_t>& a,
                           const std::vector<std::uint16_t>& b) {
  return type == Half::bf16 ? run_mma<F, __nv_bfloat16>(k, n, a, b) : run_mma<F, __half>(k, n, a, b);
}

template <int R, int C>
std::vector<std::uint16_t> run_round_trip(const std::vector<std::uint16_t>& tensor, std::vector<std::uint16_t> out,
                                          int row_tile, int col_tile) {
  using tile = st<__nv_bfloat16, R, C>;
  DeviceBuffer<std::uint16_t> din(tensor.size()), dout(out.size());
  din.upload(tensor);
  dout.upload(out);
  const auto* in_ptr = reinterpret_cast<const __nv_bfloat16*>(din.get());
  const CUtensorMap in = tma_map<tile>(in_ptr, 2 * R, 2 * C);
  const CUtensorMap to = tma_map<tile>(reinterpret_cast<const __nv_bfloat16*>(dout.get()), 2 * R, 2 * C);
  const int smem = tile::bytes + kSmemAlign;
  TK_CUDA(cudaFuncSetAttribute(tma_round_trip_kernel<R, C>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  tma_round_trip_kernel<R, C><<<1, 32, smem>>>(in, to, row_tile, col_tile);
  TK_CUDA(cudaGetLastError());
  return dout.download();
}

}  // namespace

std::vector<float> mma(Mma form, Half type, int k, int n, const std::vector<std::uint16_t>& a,
                       const std::vector<std::uint16_t>& b) {
  switch (form) {
    case Mma::ABt_ss:
      return run_mma<Mma::ABt_ss>(type, k, n, a, b);
    case Mma::AB_ss:
      return run_mma<Mma::AB_ss>(type, k, n, a, b);
    case Mma::ABt_rs:
      return run_mma<Mma::ABt_rs>(type, k, n, a, b);
    case Mma::AtB_ss:
      return run_mma<Mma::AtB_ss>(type, k, n, a, b);
    case Mma::AtBt_ss:
      return run_mma<Mma::AtBt_ss>(type, k, n, a, b);
    default:
      return run_mma<Mma::AB_rs>(type, k, n, a, b);
  }
}

std::vector<std::uint16_t> tma_round_trip(int rows, int cols, const std::vector<std::uint16_t>& tensor,
                                          std::vector<std::uint16_t> out, int row_tile, int col_tile) {
  if (rows == kTmaShapes[0][0] && cols == kTmaShapes[0][1]) {
    return run_round_trip<kTmaShapes[0][0], kTmaShapes[0][1]>(tensor, std::move(out), row_tile, col_tile);
  }
  if (rows == kTmaShapes[1][0] && cols == kTmaShapes[1][1]) {
    return run_round_trip<kTmaShapes[1][0], kTmaShapes[1][1]>(tensor, std::move(out), row_tile, col_tile);
  }
  throw std::invalid_argument("no TMA round-trip kernel for this tile");
}

}  // namespace tkprobe::test_kernels::dsl_wg
