// The portable FlashAttention-2 forward (sm_80 and newer): mma.sync, ldmatrix and cp.async, no
// TMA, wgmma or setmaxnreg. A block of 4 warps takes 64 queries of one (batch, head)
// (portable_tiles.hpp); each warp keeps its 16 queries in registers and streams the keys and
// values through shared memory 64 at a time, the next tile's cp.async copies in flight while
// it works on this one. Per key tile a warp computes S = Q K^T, folds S into an online softmax
// (running row max m and sum l, in base 2 with the 1/sqrt(D) scale folded into the exponent)
// and accumulates O += P V; at the end O /= l and LSE = m / sqrt(D) + ln l. The keys a query
// attends are mask.hpp's; a row attending none (causal, fewer keys than queries) ends with l =
// +inf, which writes its O as 0 and its LSE as +inf.
//
// The head dimension is cut into slices 64 wide: Q, K, V, O are arrays of slices, so a warp
// never holds more than one 64 x 64 K or V slice in registers (a whole 64 x 128 one would not
// fit beside Q and O).
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/attention/launchers.hpp"
#include "kernels/attention/portable_tiles.hpp"
#include "tk/group.cuh"

namespace attention::detail {
namespace {

using namespace tk;
using namespace attention::portable;
using bf16 = __nv_bfloat16;

constexpr int kThreads = kWarps * kWarpThreads;
constexpr int kSlice = 64;                // head-dimension columns per slice: one 128-byte swizzled row
constexpr int kStages = 2;                // key/value tiles in shared memory: the one in use, the next one landing
constexpr int kSharedPerSm = 164 * 1024;  // sm_80's most (sm_90 has 228 KB)
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kInfinity = std::numeric_limits<float>::infinity();

using block = group<kWarps>;
using one_warp = group<1>;

template <int D>
struct Tiles {
  static_assert(D % kSlice == 0, "attention (mma_sync): the head dim must be whole slices");
  static constexpr int slices = D / kSlice;
  using q_tile = st<bf16, kRowsPerWarp, kSlice>;  // a warp's queries, one slice
  using kv_tile = st<bf16, kKeys, kSlice>;        // a key (value) tile, one slice
  using q_reg = rt_bf<kRowsPerWarp, kSlice>;
  using k_reg = rt_bf<kKeys, kSlice>;         // row_l N x K: mma_ABt's B
  using v_reg = rt_bf<kKeys, kSlice, col_l>;  // col_l K x N: mma_AB's B
  using o_reg = rt_fl<kRowsPerWarp, kSlice>;
  using o_out = rt_bf<kRowsPerWarp, kSlice>;
  using s_reg = rt_fl<kRowsPerWarp, kKeys>;  // scores, then probabilities
  using p_reg = rt_bf<kRowsPerWarp, kKeys>;
  using rows = s_reg::row_vec;  // one float per query row

  struct Stage {
    kv_tile k[slices], v[slices];
  };
  struct Smem {
    q_tile q[kWarps][slices];
    Stage stage[kStages];
  };
  static constexpr int smem_bytes = sizeof(Smem) + kSmemAlign;  // room to align the tiles
  // The blocks that fit an SM's shared memory, for which ptxas budgets registers (64K / their
  // threads): D = 64 fits 4 in 128 registers; D = 128 only 2, so its tiles get ~190 registers
  // rather than spilling at the 168 ptxas picks unasked.
  static constexpr int blocks_per_sm = kSharedPerSm / smem_bytes;
};

// One (batch, head)'s rows of a [batch][heads][seq][head_dim] tensor.
template <class T>
__device__ T* head_rows(T* base, int batch, int heads, int head, int seq, int dim) {
  return base + (std::size_t(batch) * heads + head) * seq * dim;
}

// The shape's mask, its causal flag the kernel's template argument, so that non-causal kernels
// compile without the diagonal's tests.
template <bool Causal>
__device__ Mask kernel_mask(Shape s) {
  return {keys(s), keys(s) - s.seq, Causal};
}

// Starts copying key tile `tile` of K and V (`keys` rows) into `stage`, as one cp.async group.
template <int D>
__device__ void load_kv(typename Tiles<D>::Stage& stage, const bf16* k, const bf16* v, int tile, int keys) {
  const int key0 = tile * kKeys;
#pragma unroll
  for (int c = 0; c < Tiles<D>::slices; ++c) {
    block::load_async(stage.k[c], k + key0 * D + c * kSlice, D, keys - key0);
    block::load_async(stage.v[c], v + key0 * D + c * kSlice, D, keys - key0);
  }
  block::commit();
}

// Folds one tile's scores into the running softmax: rescales what O and l hold to the new row
// max, and turns the scores into probabilities exp2((s - m) * scale * log2 e).
template <int D>
__device__ void online_softmax(typename Tiles<D>::s_reg& s, typename Tiles<D>::rows& max, typename Tiles<D>::rows& sum,
                               typename Tiles<D>::o_reg (&o)[Tiles<D>::slices], float scale_log2) {
  typename Tiles<D>::rows new_max, shift, rescale;
  warp::row_max(new_max, s, max);
  warp::mul(shift, new_max, scale_log2);
  warp::mul(rescale, max, scale_log2);  // exp2((m_old - m_new) * scale log2 e): 0 on the first tile
  warp::sub(rescale, rescale, shift);
  warp::exp2(rescale, rescale);
  warp::mul(s, s, scale_log2);  // one FFMA per score with the subtraction
  warp::sub_row(s, s, shift);
  warp::exp2(s, s);
  warp::mul(sum, sum, rescale);
  warp::row_sum(sum, s, sum);
#pragma unroll
  for (int c = 0; c < Tiles<D>::slices; ++c) warp::mul_row(o[c], o[c], rescale);
  max = new_max;
}

// Grid (query tiles, heads, batch); blocks of kWarps warps.
template <int D, bool Causal>
__global__ void __launch_bounds__(kThreads, Tiles<D>::blocks_per_sm)
    forward_kernel(const Tensors t, const Shape s, float scale) {
  using F = Tiles<D>;
  extern __shared__ std::uint8_t raw[];
  auto& sm = aligned_smem<typename F::Smem>(raw);
  const int warp = threadIdx.x / kWarpThreads, head = blockIdx.y, batch = blockIdx.z;
  const int kv_head = head / (s.heads / s.kv_heads);
  const Mask mask = kernel_mask<Causal>(s);
  const int q0 = query_tile(blockIdx.x, gridDim.x, Causal) * kBlockRows, warp_q0 = q0 + warp * kRowsPerWarp;
  const bf16* q = head_rows(t.q, batch, s.heads, head, s.seq, D) + warp_q0 * D;
  const bf16* k = head_rows(t.k, batch, s.kv_heads, kv_head, mask.keys, D);
  const bf16* v = head_rows(t.v, batch, s.kv_heads, kv_head, mask.keys, D);
  const int tiles = key_tiles(q0, mask), valid_rows = s.seq - warp_q0;
  const float scale_log2 = scale * kLog2e;

#pragma unroll
  for (int c = 0; c < F::slices; ++c) one_warp::load_async(sm.q[warp][c], q + c * kSlice, D, valid_rows);
  load_kv<D>(sm.stage[0], k, v, 0, mask.keys);  // commits the queries' copies too
  block::wait<0>();
  __syncthreads();
  typename F::q_reg queries[F::slices];
  typename F::o_reg o[F::slices];
  typename F::rows max, sum;
#pragma unroll
  for (int c = 0; c < F::slices; ++c) {
    warp::load(queries[c], sm.q[warp][c]);
    warp::zero(o[c]);
  }
  warp::neg_inf(max);
  warp::zero(sum);

  for (int j = 0; j < tiles; ++j) {
    if (j + 1 < tiles) load_kv<D>(sm.stage[(j + 1) % kStages], k, v, j + 1, mask.keys);
    const typename F::Stage& kv = sm.stage[j % kStages];
    const int key0 = j * kKeys;
    typename F::s_reg scores;
    warp::zero(scores);
#pragma unroll
    for (int c = 0; c < F::slices; ++c) {
      typename F::k_reg keys;
      warp::load(keys, kv.k[c]);
      warp::mma_ABt(scores, queries[c], keys, scores);
    }
    if (mask.needs_mask(warp_q0, key0, kKeys)) {
      warp::fill_where(scores, -kInfinity, [&](int row, int col) { return mask.hides(warp_q0 + row, key0 + col); });
    }
    online_softmax<D>(scores, max, sum, o, scale_log2);
    typename F::p_reg probs;
    warp::copy(probs, scores);
#pragma unroll
    for (int c = 0; c < F::slices; ++c) {
      typename F::v_reg values;
      warp::load(values, kv.v[c]);
      warp::mma_AB(o[c], probs, values, o[c]);
    }
    block::wait<0>();
    __syncthreads();  // tile j + 1 has landed, and no warp still reads tile j's stage
  }

  if (mask.attends_none(warp_q0)) {  // l = +inf: O = o / l = 0 (o is finite) and LSE = m + ln l = +inf
    warp::fill_where(sum, kInfinity, [&](int row) { return mask.attends_none(warp_q0 + row); });
  }
  bf16* out = head_rows(t.o, batch, s.heads, head, s.seq, D) + warp_q0 * D;
#pragma unroll
  for (int c = 0; c < F::slices; ++c) {
    typename F::o_out rounded;
    warp::div_row(o[c], o[c], sum);
    warp::copy(rounded, o[c]);
    warp::store(out + c * kSlice, rounded, D, valid_rows);
  }
  typename F::rows lse;  // ln sum_j exp(q.k_j scale) = m scale + ln l
  warp::log(lse, sum);
  warp::mul(max, max, scale);
  warp::add(lse, lse, max);
  warp::store(head_rows(t.lse, batch, s.heads, head, s.seq, 1) + warp_q0, lse, valid_rows);
}

template <int D, bool Causal>
Launch launch(const Tensors& t, Shape s) {
  constexpr auto kernel = forward_kernel<D, Causal>;
  const cudaError_t set =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tiles<D>::smem_bytes);
  if (set != cudaSuccess) throw std::runtime_error(std::string("attention (mma_sync): ") + cudaGetErrorString(set));
  const dim3 grid(query_tiles(s.seq), s.heads, s.batch);
  const float scale = 1.0f / std::sqrt(float(D));
  return [=](cudaStream_t stream) { kernel<<<grid, kThreads, Tiles<D>::smem_bytes, stream>>>(t, s, scale); };
}

template <int D>
Launch launch_for_dim(const Tensors& t, Shape s) {
  return s.causal ? launch<D, true>(t, s) : launch<D, false>(t, s);
}

bool aligned(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

// Offsets within a head are ints, up to the end of the last tile of `tile` rows past `rows`.
std::string int_offsets_refusal(const std::string& name, int rows, int tile, int head_dim) {
  const long long padded_rows = (static_cast<long long>(rows) + tile - 1) / tile * tile;
  constexpr long long kMaxElements = std::numeric_limits<int>::max();
  if (padded_rows * head_dim <= kMaxElements) return "";
  return name + " = " + std::to_string(rows) + ": give at most " + std::to_string(kMaxElements / head_dim - tile) +
         " for head dim " + std::to_string(head_dim) + " (the kernel indexes a head with ints)";
}

}  // namespace

std::string portable_refusal(Shape s) {
  constexpr int kMaxGridDim = 65535;  // heads and batch are grid dimensions y and z
  if (s.heads > kMaxGridDim || s.batch > kMaxGridDim) {
    return "batch and heads must each be at most " + std::to_string(kMaxGridDim) + " (the mma_sync kernel's grid)";
  }
  if (std::string why = int_offsets_refusal("seq", s.seq, kBlockRows, s.head_dim); !why.empty()) return why;
  return int_offsets_refusal("seq k", keys(s), kKeys, s.head_dim);
}

Launch portable_forward(const Tensors& t, Shape s) {
  if (!aligned(t.q, arch::kCpAsyncBytes) || !aligned(t.k, arch::kCpAsyncBytes) || !aligned(t.v, arch::kCpAsyncBytes) ||
      !aligned(t.o, sizeof(packed<bf16>))) {
    throw std::invalid_argument("attention (mma_sync): Q, K and V must be 16-byte aligned (cp.async), O 4-byte");
  }
  return s.head_dim == 64 ? launch_for_dim<64>(t, s) : launch_for_dim<128>(t, s);
}

}  // namespace attention::detail
