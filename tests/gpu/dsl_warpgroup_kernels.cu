#include <iterator>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "src/device_buffer.hpp"
#include "tests/gpu/dsl_warpgroup_kernels.hpp"
#include "tk/arch/mbarrier.cuh"
#include "tk/ops/warp/fp8.cuh"
#include "tk/ops/warpgroup/mma.cuh"
#include "tk/ops/warpgroup/tma.cuh"
#include "tk/sync/pipeline.cuh"
#include "tk/sync/turns.cuh"
#include "tk/types/gl.cuh"
#include "tk/warp.cuh"

namespace tkprobe::test_kernels::dsl_wg {
namespace {

using namespace tk;

// The kernel's dynamic shared memory as Smem.
template <class Smem>
__device__ Smem& dynamic_smem() {
  extern __shared__ std::uint8_t raw[];
  return aligned_smem<Smem>(raw);
}

// Fills a shared tile from a row-major matrix through st::operator() (the layout's own math).
template <class ST>
__device__ void fill(ST& t, const typename ST::element* m) {
  for (int i = threadIdx.x; i < ST::rows * ST::cols; i += blockDim.x) t(i / ST::cols, i % ST::cols) = m[i];
}

template <int Members>
__global__ void turns_kernel(int rounds, int* order) {
  __shared__ int next;
  if (threadIdx.x == 0) next = 0;
  __syncthreads();
  const warpgroup::turns<Members, 1> turn{warpgroup::index()};
  turn.start();
  for (int r = 0; r < rounds; ++r) {
    turn.wait();
    if (warpgroup::thread() == 0) {
      volatile int& counter = next;  // each turn reads what the last one wrote
      order[r * Members + turn.member] = counter;
      counter = counter + 1;
    }
    turn.pass();
  }
  turn.finish();
}

template <int Members>
std::vector<int> run_turns(int rounds) {
  DeviceBuffer<int> order(std::size_t(rounds) * Members);
  order.poison();
  turns_kernel<Members><<<1, Members * 128>>>(rounds, order.get());
  TK_CUDA(cudaGetLastError());
  return order.download();
}

template <Mma F, class T, int K, int N>
__global__ void __launch_bounds__(128) mma_kernel(const T* a, const T* b, const float* c, float* d) {
  constexpr bool b_transposed = F == Mma::ABt_ss || F == Mma::ABt_rs || F == Mma::AtBt_ss;
  constexpr bool a_transposed = F == Mma::AtB_ss || F == Mma::AtBt_ss;
  using a_tile = std::conditional_t<a_transposed, st<T, K, warpgroup::kRows>, st<T, warpgroup::kRows, K>>;
  using b_tile = std::conditional_t<b_transposed, st<T, N, K>, st<T, K, N>>;
  struct Smem {
    a_tile a;
    b_tile b;
  };
  Smem& sm = dynamic_smem<Smem>();
  fill(sm.a, a);
  fill(sm.b, b);
  arch::fence_proxy_async();  // written by threads, read by the tensor cores
  __syncthreads();
  const int w = threadIdx.x / 32;
  rt<T, 16, K> a_rows;
  if constexpr (!a_transposed) warp::load(a_rows, a + w * 16 * K, K);
  rt_fl<16, N> acc;  // the warp's 16 rows of the accumulator: C's where given
  const bool accumulate = c != nullptr;
  if (accumulate) warp::load(acc, c + w * 16 * N, N);
  warpgroup::mma_fence();
  if constexpr (F == Mma::ABt_ss) warpgroup::mma_ABt(acc, sm.a, sm.b, accumulate);
  if constexpr (F == Mma::AB_ss) warpgroup::mma_AB(acc, sm.a, sm.b, accumulate);
  if constexpr (F == Mma::ABt_rs) warpgroup::mma_ABt(acc, a_rows, sm.b, accumulate);
  if constexpr (F == Mma::AB_rs) warpgroup::mma_AB(acc, a_rows, sm.b, accumulate);
  if constexpr (F == Mma::AtB_ss) warpgroup::mma_AtB(acc, sm.a, sm.b, accumulate);
  if constexpr (F == Mma::AtBt_ss) warpgroup::mma_AtBt(acc, sm.a, sm.b, accumulate);
  warpgroup::mma_commit();
  warpgroup::mma_wait<0>();
  warp::store(d + w * 16 * N, acc, N);
}

__global__ void __launch_bounds__(128) e4m3_pv_kernel(const float* p, const std::uint8_t* vt, float* o) {
  using v_tile = st<__nv_fp8_e4m3, kE4m3Dim, kE4m3Keys>;
  v_tile& v = dynamic_smem<v_tile>();
  for (int i = threadIdx.x; i < kE4m3Dim * kE4m3Keys; i += blockDim.x)
    reinterpret_cast<std::uint8_t&>(v(i / kE4m3Keys, i % kE4m3Keys)) = vt[i];
  arch::fence_proxy_async();
  __syncthreads();
  const int w = threadIdx.x / 32;
  rt_fl<16, kE4m3Keys> s;
  warp::load(s, p + w * 16 * kE4m3Keys, kE4m3Keys);
  rt_e4m3<kE4m3Keys> pr;
  warp::copy_e4m3(pr, s, 1.0f);
  rt_fl<16, kE4m3Dim> acc;
  warpgroup::mma_fence();
  warpgroup::mma_ABt(acc, pr, v, false);
  warpgroup::mma_commit();
  warpgroup::mma_wait<0>();
  warp::store(o + w * 16 * kE4m3Dim, acc, kE4m3Dim);
}

template <class T, int R, int C>
__global__ void tma_round_trip_kernel(const __grid_constant__ CUtensorMap in, const __grid_constant__ CUtensorMap out,
                                      int row_tile, int col_tile) {
  using tile = st<T, R, C>;
  __shared__ alignas(8) std::uint64_t bar;
  tile& t = dynamic_smem<tile>();
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

// A shared vector of kVectorLength floats from src through one bulk copy, then out by 64 threads.
__global__ void vector_load_kernel(const float* src, float* out) {
  __shared__ alignas(8) std::uint64_t bar;
  __shared__ sv<float, kVectorLength> v;
  const std::uint32_t b = arch::shared_address(&bar);
  if (threadIdx.x == 0) {
    arch::mbarrier_init(b, 1);
    arch::fence_mbarrier_init();
    arch::mbarrier_arrive_expect_tx(b, tma::bytes<sv<float, kVectorLength>>());
    tma::load_async(v, src, b);
  }
  __syncthreads();
  arch::mbarrier_wait(b, 0);
  out[threadIdx.x] = v[threadIdx.x];
}

constexpr int kRingTile = 64;  // the pipeline test's tiles: 64 x 64 16-bit elements

template <int Stages>
__global__ void __launch_bounds__(256) pipeline_kernel(const __grid_constant__ CUtensorMap map, int steps,
                                                       __nv_bfloat16* out) {
  using tile = st<__nv_bfloat16, kRingTile, kRingTile>;
  struct Smem {
    tile stage[Stages];
    pipeline<Stages> pipe;
  };
  Smem& sm = dynamic_smem<Smem>();
  constexpr int kConsumerWarps = 4;
  if (threadIdx.x == 0) sm.pipe.init(kConsumerWarps);
  __syncthreads();
  if (warpgroup::index() == 0) {  // the producer: one thread
    if (warpgroup::thread() != 0) return;
    for (int step = 0; step < steps; ++step) {
      const std::uint32_t full = sm.pipe.acquire(step, tma::bytes<tile>());
      tma::load_async(sm.stage[sm.pipe.stage(step)], map, step, 0, full);
    }
    return;
  }
  const int w = warpgroup::thread() / 32, lane = threadIdx.x % 32;  // the consumers: 16 rows per warp
  for (int step = 0; step < steps; ++step) {
    sm.pipe.wait_full(step);
    const tile& t = sm.stage[sm.pipe.stage(step)];
    for (int i = lane; i < 16 * kRingTile; i += 32) {
      const int r = 16 * w + i / kRingTile, c = i % kRingTile;
      out[(step * kRingTile + r) * kRingTile + c] = t(r, c);
    }
    __syncwarp();  // the warp's reads are done before its release
    if (lane == 0) sm.pipe.release(step);
  }
}

template <int Stages>
std::vector<std::uint16_t> run_pipeline(int steps, const std::vector<std::uint16_t>& tensor) {
  using tile = st<__nv_bfloat16, kRingTile, kRingTile>;
  const std::size_t n = std::size_t(steps) * kRingTile * kRingTile;
  if (tensor.size() != n) throw std::invalid_argument("pipeline_copy: the tensor must be 64 steps x 64");
  DeviceBuffer<std::uint16_t> din(n), dout(n);
  din.upload(tensor);
  dout.poison();
  const auto* in = reinterpret_cast<const __nv_bfloat16*>(din.get());
  const CUtensorMap map = tma_map<tile>(in, std::uint64_t(steps) * kRingTile, kRingTile);
  const int smem = int(sizeof(tile)) * Stages + 2 * kSmemAlign;  // the ring, its barriers, room to align
  TK_CUDA(cudaFuncSetAttribute(pipeline_kernel<Stages>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  pipeline_kernel<Stages><<<1, 256, smem>>>(map, steps, reinterpret_cast<__nv_bfloat16*>(dout.get()));
  TK_CUDA(cudaGetLastError());
  return dout.download();
}

template <Mma F, class T, int K, int N>
std::vector<float> run_mma(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b,
                           const std::vector<float>& c) {
  if (!c.empty() && c.size() != std::size_t(warpgroup::kRows) * N) {
    throw std::invalid_argument("mma: C of the wrong size");
  }
  DeviceBuffer<std::uint16_t> da(a.size()), db(b.size());
  da.upload(a);
  db.upload(b);
  DeviceBuffer<float> dc(c.empty() ? 1 : c.size());
  if (!c.empty()) dc.upload(c);
  DeviceBuffer<float> dd(warpgroup::kRows * N);
  dd.poison();
  const auto kernel = mma_kernel<F, T, K, N>;
  const int smem = (warpgroup::kRows * K + K * N) * 2 + 2 * kSmemAlign;
  TK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kernel<<<1, 128, smem>>>(reinterpret_cast<const T*>(da.get()), reinterpret_cast<const T*>(db.get()),
                           c.empty() ? nullptr : dc.get(), dd.get());
  TK_CUDA(cudaGetLastError());
  return dd.download();
}

template <Mma F, class T, std::size_t... S>
std::vector<float> run_mma(int k, int n, const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b,
                           const std::vector<float>& c, std::index_sequence<S...>) {
  std::vector<float> d;
  const bool found = ((k == kMmaShapes[S][0] && n == kMmaShapes[S][1] &&
                       (d = run_mma<F, T, kMmaShapes[S][0], kMmaShapes[S][1]>(a, b, c), true)) || ...);
  if (!found) throw std::invalid_argument("no mma kernel for this shape");
  return d;
}

template <Mma F, class T>
std::vector<float> run_mma(int k, int n, const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b,
                           const std::vector<float>& c) {
  return run_mma<F, T>(k, n, a, b, c, std::make_index_sequence<std::size(kMmaShapes)>());
}

template <Mma F>
std::vector<float> run_mma(Half type, int k, int n, const std::vector<std::uint16_t>& a,
                           const std::vector<std::uint16_t>& b, const std::vector<float>& c) {
  return type == Half::bf16 ? run_mma<F, __nv_bfloat16>(k, n, a, b, c) : run_mma<F, __half>(k, n, a, b, c);
}

// T is the tile's element type, Bits an unsigned integer of its size that the host moves.
template <class T, class Bits, int R, int C>
std::vector<Bits> run_round_trip(const std::vector<Bits>& tensor, std::vector<Bits> out, int row_tile, int col_tile) {
  static_assert(sizeof(T) == sizeof(Bits));
  using tile = st<T, R, C>;
  DeviceBuffer<Bits> din(tensor.size()), dout(out.size());
  din.upload(tensor);
  dout.upload(out);
  const CUtensorMap in = tma_map<tile>(reinterpret_cast<const T*>(din.get()), 2 * R, 2 * C);
  const CUtensorMap to = tma_map<tile>(reinterpret_cast<const T*>(dout.get()), 2 * R, 2 * C);
  const int smem = tile::bytes + kSmemAlign;
  TK_CUDA(cudaFuncSetAttribute(tma_round_trip_kernel<T, R, C>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  tma_round_trip_kernel<T, R, C><<<1, 32, smem>>>(in, to, row_tile, col_tile);
  TK_CUDA(cudaGetLastError());
  return dout.download();
}

template <class T, class Bits>
std::vector<Bits> round_trip(int rows, int cols, const std::vector<Bits>& tensor, std::vector<Bits> out, int row_tile,
                             int col_tile) {
  if (rows == kTmaShapes[0][0] && cols == kTmaShapes[0][1]) {
    return run_round_trip<T, Bits, kTmaShapes[0][0], kTmaShapes[0][1]>(tensor, std::move(out), row_tile, col_tile);
  }
  if (rows == kTmaShapes[1][0] && cols == kTmaShapes[1][1]) {
    return run_round_trip<T, Bits, kTmaShapes[1][0], kTmaShapes[1][1]>(tensor, std::move(out), row_tile, col_tile);
  }
  throw std::invalid_argument("no TMA round-trip kernel for this tile");
}

}  // namespace

std::vector<float> mma(Mma form, Half type, int k, int n, const std::vector<std::uint16_t>& a,
                       const std::vector<std::uint16_t>& b, const std::vector<float>& c) {
  switch (form) {
    case Mma::ABt_ss:
      return run_mma<Mma::ABt_ss>(type, k, n, a, b, c);
    case Mma::AB_ss:
      return run_mma<Mma::AB_ss>(type, k, n, a, b, c);
    case Mma::ABt_rs:
      return run_mma<Mma::ABt_rs>(type, k, n, a, b, c);
    case Mma::AtB_ss:
      return run_mma<Mma::AtB_ss>(type, k, n, a, b, c);
    case Mma::AtBt_ss:
      return run_mma<Mma::AtBt_ss>(type, k, n, a, b, c);
    default:
      return run_mma<Mma::AB_rs>(type, k, n, a, b, c);
  }
}

std::vector<std::uint16_t> tma_round_trip(int rows, int cols, const std::vector<std::uint16_t>& tensor,
                                          std::vector<std::uint16_t> out, int row_tile, int col_tile) {
  return round_trip<__nv_bfloat16>(rows, cols, tensor, std::move(out), row_tile, col_tile);
}

std::vector<std::uint32_t> tma_round_trip(int rows, int cols, const std::vector<std::uint32_t>& tensor,
                                          std::vector<std::uint32_t> out, int row_tile, int col_tile) {
  return round_trip<float>(rows, cols, tensor, std::move(out), row_tile, col_tile);
}

std::vector<float> e4m3_pv(const std::vector<float>& p, const std::vector<std::uint8_t>& vt) {
  DeviceBuffer<float> p_d(p.size()), o(std::size_t(warpgroup::kRows) * kE4m3Dim);
  DeviceBuffer<std::uint8_t> vt_d(vt.size());
  p_d.upload(p);
  vt_d.upload(vt);
  o.poison();
  constexpr int kSmem = kE4m3Dim * kE4m3Keys + kSmemAlign;
  TK_CUDA(cudaFuncSetAttribute(e4m3_pv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  e4m3_pv_kernel<<<1, 128, kSmem>>>(p_d.get(), vt_d.get(), o.get());
  TK_CUDA(cudaGetLastError());
  return o.download();
}

std::vector<float> vector_load(const std::vector<float>& tensor, int offset) {
  DeviceBuffer<float> in(tensor.size()), out(kVectorLength);
  in.upload(tensor);
  out.poison();
  vector_load_kernel<<<1, kVectorLength>>>(in.get() + offset, out.get());
  TK_CUDA(cudaGetLastError());
  return out.download();
}

std::vector<std::uint16_t> pipeline_copy(int stages, int steps, const std::vector<std::uint16_t>& tensor) {
  if (stages == kPipelineStages[0]) return run_pipeline<kPipelineStages[0]>(steps, tensor);
  if (stages == kPipelineStages[1]) return run_pipeline<kPipelineStages[1]>(steps, tensor);
  throw std::invalid_argument("no pipeline kernel for this stage count");
}

std::vector<int> turn_order(int members, int rounds) {
  if (members == kTurnMembers[0]) return run_turns<kTurnMembers[0]>(rounds);
  if (members == kTurnMembers[1]) return run_turns<kTurnMembers[1]>(rounds);
  throw std::invalid_argument("no turns kernel for this member count");
}

}  // namespace tkprobe::test_kernels::dsl_wg
