// The Hopper FlashAttention forward (attention.hpp), in the DSL. One block per 128 or 192 query
// rows of one (batch, head): a producer warpgroup streams K and V tiles through a ring of stages
// with the TMA, and two or three consumer warpgroups of 64 query rows each run the online
// softmax between two wgmma products (S = Q K^T, O += P V). The TMA zero-fills the rows of Q, K and V past the
// sequence and drops the rows of O past it; scores of keys past it are masked to -inf.
#include <cmath>

#include "kernels/attention/launchers.hpp"
#include "tk/types/gl.cuh"
#include "tk/warpgroup.cuh"

namespace attention::detail {
namespace {

using namespace tk;
using bf16 = __nv_bfloat16;

constexpr int kBlockKV = 128;  // keys per tile

// Per head dimension: consumer warpgroups of 64 query rows each, and the K/V stages the rest of
// shared memory holds. At D = 64 three consumers fit in the registers (setmaxnreg: 128 x (24 +
// 3 x 160) <= 64K), and keep the tensor cores busy while any one of them is in its softmax. At
// D = 128 a consumer's S and O take 128 registers: ptxas serialises the wgmmas below 168, so
// two consumers of 240.
template <int D>
struct Config {
  static constexpr int consumers = D == 64 ? 3 : 2;
  static constexpr int consumer_registers = D == 64 ? 160 : 240;
  static constexpr int producer_registers = 24;
  static constexpr int threads = (1 + consumers) * 128;
  static constexpr int block_q = consumers * warpgroup::kRows;  // query rows per block

  using q = st<bf16, warpgroup::kRows, D>;  // one consumer's queries, and at the end its output
  using kv = st<bf16, kBlockKV, D>;         // a tile of keys or values
  using scores = rt_fl<16, kBlockKV>;       // each warp's 16 rows of S
  using probs = rt_bf<16, kBlockKV>;        // and of P, the A operand of P V
  using out = rt_fl<16, D>;                 // each warp's 16 rows of O, accumulated
  using out_bf = rt_bf<16, D>;
  using rows = scores::row_vec;             // a value per row: max, sum, rescale factor
  static constexpr int stages = D == 64 ? 4 : 3;  // 4 x 32 KB or 3 x 64 KB
  static constexpr std::uint32_t stage_bytes = 2 * tma::bytes<kv>();
};

template <int D>
struct Smem {
  using C = Config<D>;
  typename C::q q[C::consumers];
  typename C::kv k[C::stages], v[C::stages];
  pipeline<C::stages> pipe;
  std::uint64_t q_full;
};
template <int D>
constexpr int kSmemBytes = sizeof(Smem<D>) + kSmemAlign;  // room to align the tiles
static_assert(kSmemBytes<64> <= kMaxSmemBytes && kSmemBytes<128> <= kMaxSmemBytes, "the stages must fit");

struct Maps {
  CUtensorMap q, k, v, o;
};

struct Problem {
  int seq, heads, kv_heads;
  bool causal;
  float scale_log2;  // log2(e) / sqrt(D): scores in base 2, so the softmax uses exp2
  float* lse;
};

// Key tiles block `q_block` reads: all of them, or with a causal mask those up to its last row.
template <int D>
__device__ int kv_tiles(const Problem& p, int q_block) {
  const int last_key = p.causal ? min(p.seq, (q_block + 1) * Config<D>::block_q) : p.seq;
  return (last_key + kBlockKV - 1) / kBlockKV;
}

template <int D>
__device__ void produce(Smem<D>& sm, const Maps& maps, const Problem& p, int q_block, int qh, int kvh) {
  const std::uint32_t q_full = arch::shared_address(&sm.q_full);
  constexpr int consumers = Config<D>::consumers;
  arch::mbarrier_arrive_expect_tx(q_full, consumers * tma::bytes<typename Config<D>::q>());
  for (int w = 0; w < consumers; ++w) tma::load_async(sm.q[w], maps.q, q_block * consumers + w, 0, q_full, qh);
  for (int j = 0; j < kv_tiles<D>(p, q_block); ++j) {
    const int s = sm.pipe.stage(j);
    const std::uint32_t full = sm.pipe.acquire(j, Config<D>::stage_bytes);
    tma::load_async(sm.k[s], maps.k, j, 0, full, kvh);
    tma::load_async(sm.v[s], maps.v, j, 0, full, kvh);
  }
}

// Consumer w: 64 query rows from q0, each warp 16 of them from `row0`.
template <int D>
__device__ void consume(Smem<D>& sm, const Maps& maps, const Problem& p, int q_block, int qh) {
  using T = Config<D>;
  const int w = warpgroup::index() - 1;
  const int q0 = q_block * T::block_q + w * warpgroup::kRows, row0 = q0 + warpgroup::warp_row();
  const bool releaser = threadIdx.x % 32 == 0;
  typename T::scores s;
  typename T::probs pr;
  typename T::out o;
  typename T::out_bf o_bf;
  typename T::rows m, m_prev, l, rescale;
  warp::neg_inf(m);
  warp::zero(l);
  warp::zero(o);
  arch::mbarrier_wait(arch::shared_address(&sm.q_full), 0);

  for (int j = 0; j < kv_tiles<D>(p, q_block); ++j) {
    const int kv0 = j * kBlockKV;
    sm.pipe.wait_full(j);
    if (!p.causal || kv0 <= q0 + warpgroup::kRows - 1) {  // else every key is in these rows' future
      warpgroup::mma_fence();
      warpgroup::mma_ABt(s, sm.q[w], sm.k[sm.pipe.stage(j)], false);
      warpgroup::mma_commit();
      warpgroup::mma_wait<0>();

      warp::mul(s, s, p.scale_log2);
      if (kv0 + kBlockKV > p.seq || (p.causal && kv0 + kBlockKV - 1 > q0)) {
        warp::fill_where(s, -INFINITY, [&](int r, int c) {
          return kv0 + c >= p.seq || (p.causal && kv0 + c > row0 + r);
        });
      }
      warp::copy(m_prev, m);
      warp::row_max(m, s, m);
      warp::sub_row(s, s, m);
      warp::exp2(s, s);
      warp::sub(rescale, m_prev, m);
      warp::exp2(rescale, rescale);
      warp::mul(l, l, rescale);
      warp::row_sum(l, s, l);
      warp::mul_row(o, o, rescale);
      warp::copy(pr, s);

      warpgroup::mma_fence();
      warpgroup::mma_AB(o, pr, sm.v[sm.pipe.stage(j)]);
      warpgroup::mma_commit();
      warpgroup::mma_wait<0>();
    }
    if (releaser) sm.pipe.release(j);
  }

  // O = O / l leaves through this consumer's Q tile, which no product reads any more.
  warp::div_row(o, o, l);
  warp::copy(o_bf, o);
  warpgroup::store(sm.q[w], o_bf);
  arch::fence_proxy_async();
  warpgroup::sync(1 + w);
  if (warpgroup::thread() == 0) {
    tma::store_async(maps.o, sm.q[w], q_block * T::consumers + w, 0, qh);
    tma::store_wait<0>();  // the tile must outlive the store
  }
  // LSE = ln(sum exp(q.k / sqrt(D))) = (m + log2 l) ln 2, m and l being in base 2.
  warp::log2(l, l);
  warp::add(l, l, m);
  warp::mul(l, l, float(M_LN2));
  warp::store(p.lse + std::size_t(qh) * p.seq + row0, l, p.seq - row0);
}

template <int D>
__global__ void __launch_bounds__(Config<D>::threads, 1) forward_kernel(const __grid_constant__ Maps maps, const Problem p) {
  extern __shared__ std::uint8_t raw[];
  Smem<D>& sm = *reinterpret_cast<Smem<D>*>(raw + (kSmemAlign - arch::shared_address(raw) % kSmemAlign) % kSmemAlign);
  // Causal blocks are longest at the end of the sequence: start those first.
  const int q_block = p.causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int head = blockIdx.y, batch = blockIdx.z;
  const int qh = batch * p.heads + head;                                   // Q and O matrix
  const int kvh = batch * p.kv_heads + head / (p.heads / p.kv_heads);  // K and V matrix
  if (threadIdx.x == 0) {
    sm.pipe.init(Config<D>::consumers * 4);  // every consumer warp releases a stage
    arch::mbarrier_init(arch::shared_address(&sm.q_full), 1);
    arch::fence_mbarrier_init();
  }
  __syncthreads();

  if (warpgroup::index() == 0) {
    warpgroup::decrease_registers<Config<D>::producer_registers>();
    if (warpgroup::thread() == 0) produce(sm, maps, p, q_block, qh, kvh);
    return;
  }
  warpgroup::increase_registers<Config<D>::consumer_registers>();
  consume(sm, maps, p, q_block, qh);
}

template <int D>
Launch launch_for(const Tensors& t, Shape s) {
  using T = Config<D>;
  const std::uint64_t rows = s.seq, q_matrices = std::uint64_t(s.batch) * s.heads;
  const std::uint64_t kv_matrices = std::uint64_t(s.batch) * s.kv_heads;
  const Maps maps{tma_map<typename T::q>(t.q, rows, D, q_matrices), tma_map<typename T::kv>(t.k, rows, D, kv_matrices),
                  tma_map<typename T::kv>(t.v, rows, D, kv_matrices), tma_map<typename T::q>(t.o, rows, D, q_matrices)};
  const Problem p{s.seq, s.heads, s.kv_heads, s.causal, float(M_LOG2E / std::sqrt(double(D))), t.lse};
  cudaFuncSetAttribute(forward_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<D>);
  const dim3 grid((s.seq + T::block_q - 1) / T::block_q, s.heads, s.batch);
  return [=](cudaStream_t stream) { forward_kernel<D><<<grid, T::threads, kSmemBytes<D>, stream>>>(maps, p); };
}

}  // namespace

std::string hopper_refusal(Shape) { return ""; }  // attention::refusal's rules are all it needs

Launch hopper_forward(const Tensors& t, Shape s) { return s.head_dim == 64 ? launch_for<64>(t, s) : launch_for<128>(t, s); }

}  // namespace attention::detail
