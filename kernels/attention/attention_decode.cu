// Decode attention over a paged KV cache (decode.hpp: layout, how the work is cut), portable
// (sm_80 and newer: mma.sync, ldmatrix, cp.async), because decode is bound by the cache's reads,
// not the tensor cores. A block takes one chunk of a kv head's query rows and one split of its
// sequence's keys; key tiles stream through kStages shared stages by cp.async, each row gathered
// through the block table. Warp w works on row tile w % row_tiles with its share of each key tile
// (keys_per_warp): S = Q K^T, an online softmax in base 2 from a running max that starts at
// kNoScore (a warp whose keys a row does not attend ends with l = 0, not NaN), O += P V. At the end
// the warps of a row tile merge their (max, sum, O) in shared memory; the block writes O and LSE, or
// with several splits its partial ones, which the combine kernel merges. An e4m3 cache lands in
// shared memory as it is stored (half the bytes) and the block converts each tile to f16 once, for
// all its warps; the products run in f16 (mma.sync takes no bf16 x f16), the key scale folds into
// the softmax's, the value scale into O at the end.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/attention/decode.hpp"
#include "tk/arch/grid_dependency.cuh"
#include "tk/group.cuh"

namespace attention::decode {
namespace {

using namespace tk;
using bf16 = __nv_bfloat16;

constexpr int kThreads = kWarps * kWarpThreads;
constexpr int kSlice = 64;          // head-dimension columns per shared tile: one 128-byte swizzled row
constexpr int kStages = 3;          // key/value tiles in flight: enough bytes per SM to keep HBM busy
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kInfinity = std::numeric_limits<float>::infinity();

using block = group<kWarps>;

using e4m3 = __nv_fp8_e4m3;

template <int D, int RowTiles, class CacheT>
struct Tiles {
  static_assert(D % kSlice == 0, "attention (decode): the head dim must be whole slices");
  static constexpr int slices = D / kSlice;
  static constexpr int key_parts = kWarps / RowTiles;  // warps sharing a row tile
  static constexpr int warp_keys = keys_per_warp(RowTiles);
  static constexpr int block_rows = RowTiles * kTileRows;
  static constexpr bool scaled = std::is_same_v<CacheT, e4m3>;  // e4m3 values times their head's scale
  using mma_t = std::conditional_t<scaled, __half, bf16>;       // the products' input type
  using q_tile = st<bf16, kTileRows, kSlice>;
  using kv_tile = st<CacheT, kKeys, kSlice>;
  using operand_tile = st<mma_t, kKeys, kSlice>;  // what the warps load K and V from
  using convert_plan = block::copy_plan<kKeys, kSlice>;  // each thread's chunks of an e4m3 kv_tile
  static_assert(convert_plan::strided, "the plan keeps one chunk's offsets a thread (3 registers), not each's");
  using q_reg = rt<mma_t, kTileRows, kSlice>;
  using k_reg = rt<mma_t, warp_keys, kSlice>;         // row_l N x K: mma_ABt's B
  using v_reg = rt<mma_t, warp_keys, kSlice, col_l>;  // col_l K x N: mma_AB's B
  using o_reg = rt_fl<kTileRows, kSlice>;
  using s_reg = rt_fl<kTileRows, warp_keys>;
  using p_reg = rt<mma_t, kTileRows, warp_keys>;
  using rows = s_reg::row_vec;

  template <class Tile>
  struct KeyTile {
    Tile k[slices], v[slices];
  };
  using Stage = KeyTile<kv_tile>;          // as loaded from the cache
  using Operands = KeyTile<operand_tile>;  // as the products read it: the stage itself for bf16
  struct Stages {
    Stage stage[kStages];
  };
  struct StagesAndConverted : Stages {
    Operands converted;  // the current e4m3 stage in f16
  };
  // Each warp's share of its row tile, for the merge after the last key tile.
  struct Partials {
    float o[kWarps][kTileRows * D];
    float max[kWarps][kTileRows], sum[kWarps][kTileRows];
    float weight[kWarps][kTileRows];  // 2^(scale (max - the row tile's max)) / the merged sum
    float lse[RowTiles][kTileRows];   // natural log; -inf where the split held no attended key
  };
  struct Smem {
    q_tile q[RowTiles][slices];
    union {
      std::conditional_t<scaled, StagesAndConverted, Stages> pipeline;
      Partials partials;
    };
  };
  static constexpr int smem_bytes = sizeof(Smem) + kSmemAlign;
};

struct Args {
  Tensors t;
  Shape s;
  int splits;
  float scale;
  Divider page_size;  // s.page_size's
  float* o_part;    // [splits][batch][q_tokens][heads][D], with several splits
  float* lse_part;  // [splits][batch][heads][q_tokens]
};

// Where query row `r` of kv head `g` of sequence `b` lies in Q and O ([batch][q_tokens][heads][D]).
__device__ std::size_t row_offset(const Shape& s, int b, int g, int r) {
  const Row row = row_of(r, group_size(s));
  return ((std::size_t(b) * s.q_tokens + row.token) * s.heads + g * group_size(s) + row.head_in_group) * s.head_dim;
}

// Starts gathering key tile [key0, key0 + kKeys) of K and V into `stage` (keys at and past `end`
// zeros), as one cp.async group: each key's row found once for K's and V's slices.
template <class F>
__device__ void load_kv(typename F::Stage& stage, const Args& a, const int* table_row, int g, int key0, int end) {
  constexpr int D = F::slices * kSlice;
  using CacheT = typename F::kv_tile::element;
  const Shape& s = a.s;
  typename F::kv_tile* tiles[2 * F::slices];
  const CacheT* sources[2 * F::slices];
#pragma unroll
  for (int c = 0; c < F::slices; ++c) {
    tiles[c] = &stage.k[c];
    tiles[F::slices + c] = &stage.v[c];
    sources[c] = static_cast<const CacheT*>(a.t.k_cache) + g * D + c * kSlice;
    sources[F::slices + c] = static_cast<const CacheT*>(a.t.v_cache) + g * D + c * kSlice;
  }
  block::load_rows_async(
      tiles, sources,
      [&](int r) {
        const long long row = cache_row(table_row, key0 + r, a.page_size, s.pages);
        return row < 0 ? -1 : row * s.kv_heads * D;
      },
      end - key0);
  block::commit();
}

// What a kv head's scores and O are multiplied by: the softmax's scale times its keys' scale, and
// its values' scale (an e4m3 cache's; 1 for bf16).
struct HeadScales {
  float score, value;
};
template <class F>
__device__ HeadScales head_scales(const Args& a, int g) {
  if constexpr (F::scaled) return {a.scale * a.t.k_scale[g], a.t.v_scale[g]};
  return {a.scale, 1.0f};
}

// The merge of the warps of each row tile, then the block's rows out: O and LSE, or the split's
// partial ones.
template <class F>
__device__ void merge_and_store(typename F::Partials& part, const Args& a, HeadScales scales, int b, int g, int row0,
                                int split) {
  constexpr int D = F::slices * kSlice, RowTiles = F::block_rows / kTileRows;
  const Shape& s = a.s;
  const float scale_log2 = scales.score * kLog2e;
  for (int i = threadIdx.x; i < F::block_rows; i += kThreads) {  // a thread per row: the weights
    const int tile = i / kTileRows, r = i % kTileRows;
    float max = kNoScore, sum = 0;
    for (int p = 0; p < F::key_parts; ++p) max = fmaxf(max, part.max[p * RowTiles + tile][r]);
    for (int p = 0; p < F::key_parts; ++p) {
      const int w = p * RowTiles + tile;
      part.weight[w][r] = exp2f((part.max[w][r] - max) * scale_log2);
      sum += part.sum[w][r] * part.weight[w][r];
    }
    for (int p = 0; p < F::key_parts; ++p) part.weight[p * RowTiles + tile][r] /= sum > 0 ? sum : 1;
    part.lse[tile][r] = sum > 0 ? max * scales.score + logf(sum) : -kInfinity;
  }
  __syncthreads();
  const int valid = rows(s) - row0;
  for (int e = threadIdx.x; e < F::block_rows * D; e += kThreads) {
    const int i = e / D, d = e % D, tile = i / kTileRows, r = i % kTileRows;
    if (i >= valid) break;
    float o = 0;
    for (int p = 0; p < F::key_parts; ++p)
      o += part.o[p * RowTiles + tile][r * D + d] * part.weight[p * RowTiles + tile][r];
    o *= scales.value;
    const std::size_t at = row_offset(s, b, g, row0 + i) + d;
    if (a.splits == 1) {
      a.t.o[at] = __float2bfloat16(o);  // no key attended: every share and so O is 0
    } else {
      a.o_part[std::size_t(split) * s.batch * s.q_tokens * s.heads * D + at] = o;
    }
  }
  for (int i = threadIdx.x; i < F::block_rows && i < valid; i += kThreads) {
    const Row row = row_of(row0 + i, group_size(s));
    const std::size_t at = (std::size_t(b) * s.heads + g * group_size(s) + row.head_in_group) * s.q_tokens + row.token;
    const float lse = part.lse[i / kTileRows][i % kTileRows];
    if (a.splits == 1) {
      a.t.lse[at] = lse == -kInfinity ? kInfinity : lse;  // a row attending no key: LSE = +inf
    } else {
      a.lse_part[std::size_t(split) * s.batch * s.heads * s.q_tokens + at] = lse;
    }
  }
}

// Key tile j as the products read it: its stage, or an e4m3 stage converted to f16 by the block
// where `plan` says (the caller has synced the block since the stage landed; this syncs after
// converting).
template <class F>
__device__ const typename F::Operands& operands(typename F::Smem& sm, int j, const typename F::convert_plan& plan) {
  const typename F::Stage& stage = sm.pipeline.stage[j % kStages];
  if constexpr (!F::scaled) {
    return stage;
  } else {
    typename F::Operands& converted = sm.pipeline.converted;
#pragma unroll
    for (int c = 0; c < F::slices; ++c) {
      block::copy(converted.k[c], stage.k[c], plan);
      block::copy(converted.v[c], stage.v[c], plan);
    }
    __syncthreads();
    return converted;
  }
}

// A row tile's queries into the products' input type (f16 beside an e4m3 cache: queries beyond
// f16's +-65504 become infinite there).
template <class QReg, class QTile>
__device__ void load_queries(QReg& d, const QTile& q) {
  if constexpr (std::is_same_v<typename QReg::element, bf16>) {
    warp::load(d, q);
  } else {
    typename QReg::template like<bf16> as_stored;
    warp::load(as_stored, q);
    warp::copy(d, as_stored);
  }
}

// Grid (splits, kv_heads x chunks, batch); blocks of kWarps warps.
template <int D, int RowTiles, bool Causal, class CacheT>
__global__ void __launch_bounds__(kThreads) decode_kernel(const Args a) {
  using F = Tiles<D, RowTiles, CacheT>;
  // Once, not every key tile: the same for all (unused for bf16). First, before `a` is read: the
  // compiler takes the plan's empty asm to write memory, and would read `a` anew after it.
  const typename F::convert_plan plan;
  extern __shared__ std::uint8_t raw[];
  auto& sm = aligned_smem<typename F::Smem>(raw);
  const Shape& s = a.s;
  const int chunks = row_cut(rows(s)).chunks;
  const int split = blockIdx.x, g = blockIdx.y / chunks, row0 = blockIdx.y % chunks * F::block_rows, b = blockIdx.z;
  const int warp = threadIdx.x / kWarpThreads, tile = warp % RowTiles, part = warp / RowTiles;
  arch::allow_dependent_grid();  // the combine may take its place on the GPU already
  const int keys = clamped_keys(a.t.lengths[b], s);
  const Mask mask{keys, keys - s.q_tokens, Causal};
  const int valid_rows = rows(s) - row0, last_row = row0 + min(valid_rows, F::block_rows) - 1;
  const KeyRange range = split_keys(keys, split, a.splits, mask, row_of(last_row, group_size(s)).token);
  const int* table_row = a.t.block_table + std::size_t(b) * s.pages_per_seq;
  const int tiles = range.end > range.begin ? ceil_div(range.end - range.begin, kKeys) : 0;
  const HeadScales scales = head_scales<F>(a, g);
  const float scale_log2 = scales.score * kLog2e;

  for (int t = 0; t < RowTiles; ++t)
#pragma unroll
    for (int c = 0; c < F::slices; ++c) {
      const int tile_row0 = row0 + t * kTileRows;
      block::load_rows_async(
          sm.q[t][c], [&](int r) { return a.t.q + row_offset(s, b, g, tile_row0 + r) + c * kSlice; },
          valid_rows - t * kTileRows);
    }
  for (int j = 0; j < kStages - 1; ++j) {  // the first tiles in flight (a group each, empty or not)
    if (j < tiles)
      load_kv<F>(sm.pipeline.stage[j], a, table_row, g, range.begin + j * kKeys, range.end);
    else
      block::commit();
  }
  typename F::q_reg queries[F::slices];
  typename F::o_reg o[F::slices];
  typename F::rows max, sum, rescale;
  warp::fill(max, kNoScore);
  warp::zero(sum);
#pragma unroll
  for (int c = 0; c < F::slices; ++c) warp::zero(o[c]);
  const int first_token = row_of(row0 + tile * kTileRows, group_size(s)).token;

  for (int j = 0; j < tiles; ++j) {
    const int next = j + kStages - 1;
    if (next < tiles)
      load_kv<F>(sm.pipeline.stage[next % kStages], a, table_row, g, range.begin + next * kKeys, range.end);
    else
      block::commit();
    block::wait<kStages - 1>();
    __syncthreads();  // tile j (and the queries) landed for every thread
    if (j == 0) {
#pragma unroll
      for (int c = 0; c < F::slices; ++c) load_queries(queries[c], sm.q[tile][c]);
    }
    const typename F::Operands& kv = operands<F>(sm, j, plan);
    const int key0 = range.begin + j * kKeys + part * F::warp_keys;
    typename F::s_reg scores;
    warp::zero(scores);
#pragma unroll
    for (int c = 0; c < F::slices; ++c) {
      typename F::k_reg k;
      warp::load(k, kv.k[c], part * F::warp_keys, 0);
      warp::mma_ABt(scores, queries[c], k, scores);
    }
    if (key0 + F::warp_keys > range.end || mask.needs_mask(first_token, key0, F::warp_keys)) {
      warp::fill_where(scores, -kInfinity, [&](int r, int col) {
        const int key = key0 + col;
        return key >= range.end || !mask.attends(row_of(row0 + tile * kTileRows + r, group_size(s)).token, key);
      });
    }
    warp::online_softmax(scores, max, sum, rescale, scale_log2);
    typename F::p_reg probs;
    warp::copy(probs, scores);
#pragma unroll
    for (int c = 0; c < F::slices; ++c) {
      typename F::v_reg v;
      warp::mul_row(o[c], o[c], rescale);
      warp::load(v, kv.v[c], part * F::warp_keys, 0);
      warp::mma_AB(o[c], probs, v, o[c]);
    }
    __syncthreads();  // every warp is done with this stage (and its conversion) before either is rewritten
  }
  block::wait<0>();
  __syncthreads();  // the stages become the partials: no copy may still land in them
  warp::sum_row_parts(sum);
  typename F::Partials& partials = sm.partials;
#pragma unroll
  for (int c = 0; c < F::slices; ++c) warp::store(partials.o[warp] + c * kSlice, o[c], D);
  warp::store(partials.max[warp], max);
  warp::store(partials.sum[warp], sum);
  __syncthreads();
  merge_and_store<F>(partials, a, scales, b, g, row0, split);
}

constexpr int kMaxHeadDim = 128;
constexpr int kSplitsPerLane = kMaxSplits / kWarpThreads;  // the combine's LSEs, over one warp's lanes

// A block per query row (b, t, h) of O, a thread per column: LSE = ln sum_s exp(lse_s) over the
// splits, O = sum_s exp(lse_s - LSE) O_s; a row no split attended gets O = 0 and LSE = +inf. The
// first warp spreads the splits' LSEs over its lanes for the weights while every thread loads its
// column of each split at once: the combine costs two round trips to memory, not one per split.
__global__ void __launch_bounds__(kMaxHeadDim) combine_kernel(const Args a) {
  static_assert(kMaxSplits % kWarpThreads == 0, "attention (decode): the combine spreads whole splits per lane");
  __shared__ float weights[kMaxSplits];
  const Shape& s = a.s;
  const int row = blockIdx.x, h = row % s.heads, t = row / s.heads % s.q_tokens, b = row / s.heads / s.q_tokens;
  const std::size_t lse_at = (std::size_t(b) * s.heads + h) * s.q_tokens + t;
  const std::size_t lse_stride = std::size_t(s.batch) * s.heads * s.q_tokens;
  const std::size_t o_stride = lse_stride * s.head_dim;  // a split's partial O: every row's
  arch::wait_for_prior_grid();  // launched early (Decode's launch): the splits' partials are complete
  const int d = threadIdx.x;
  float column[kMaxSplits];
#pragma unroll
  for (int k = 0; k < kMaxSplits; ++k)
    column[k] = k < a.splits && d < s.head_dim ? a.o_part[k * o_stride + std::size_t(row) * s.head_dim + d] : 0.0f;
  if (threadIdx.x < kWarpThreads) {
    float lse_of[kSplitsPerLane], max = -kInfinity;
#pragma unroll
    for (int i = 0; i < kSplitsPerLane; ++i) {
      const int k = threadIdx.x + i * kWarpThreads;
      lse_of[i] = k < a.splits ? a.lse_part[k * lse_stride + lse_at] : -kInfinity;
      max = fmaxf(max, lse_of[i]);
    }
    max = warp::lanes_max(max);
    float sum = 0;
#pragma unroll
    for (int i = 0; i < kSplitsPerLane; ++i) sum += max == -kInfinity ? 0.0f : expf(lse_of[i] - max);
    sum = warp::lanes_sum(sum);
    const float lse = max == -kInfinity ? kInfinity : max + logf(sum);
#pragma unroll
    for (int i = 0; i < kSplitsPerLane; ++i)  // 0 past the splits, and everywhere with none attended
      weights[threadIdx.x + i * kWarpThreads] = expf(lse_of[i] - lse);
    if (threadIdx.x == 0) a.t.lse[lse_at] = lse;
  }
  __syncthreads();
  float o = 0;
#pragma unroll
  for (int k = 0; k < kMaxSplits; ++k) o += weights[k] * column[k];
  if (d < s.head_dim) a.t.o[std::size_t(row) * s.head_dim + d] = __float2bfloat16(o);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("attention (decode): ") + what + ": " + cudaGetErrorString(e));
}

using Kernel = void (*)(Args);

// The kernel for `s` and its dynamic shared memory, which it is allowed to take.
struct Prepared {
  Kernel kernel;
  int smem_bytes;
};

template <int D, int RowTiles, class CacheT>
Prepared prepared_for(bool causal) {
  return {causal ? decode_kernel<D, RowTiles, true, CacheT> : decode_kernel<D, RowTiles, false, CacheT>,
          Tiles<D, RowTiles, CacheT>::smem_bytes};
}

template <int D, class CacheT>
Prepared prepared_for(int row_tiles, bool causal) {
  return row_tiles == 1   ? prepared_for<D, 1, CacheT>(causal)
         : row_tiles == 2 ? prepared_for<D, 2, CacheT>(causal)
                          : prepared_for<D, kWarps, CacheT>(causal);
}

template <class CacheT>
Prepared prepared_for(Shape s) {
  const int row_tiles = row_cut(rows(s)).row_tiles;
  return s.head_dim == 64 ? prepared_for<64, CacheT>(row_tiles, s.causal)
                          : prepared_for<128, CacheT>(row_tiles, s.causal);
}

Prepared prepared(Shape s) {
  const Prepared p = s.cache == Cache::e4m3 ? prepared_for<e4m3>(s) : prepared_for<bf16>(s);
  check(cudaFuncSetAttribute(p.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, p.smem_bytes), "shared memory");
  return p;
}

// The blocks of the prepared kernel the current GPU holds at once.
int resident_blocks(Prepared p) {
  int device = 0, sms = 0, per_sm = 0;
  check(cudaGetDevice(&device), "device");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, p.kernel, kThreads, p.smem_bytes), "occupancy");
  return sms * per_sm;
}

// The combine, launched early where the GPU can (programmatic dependent launch, sm_90): its launch
// and blocks wait under the decode kernel's tail instead of after it.
void launch_combine(dim3 grid, cudaStream_t stream, const Args& args, bool early) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{grid, dim3(kMaxHeadDim), 0, stream, &attribute, early ? 1u : 0u};
  check(cudaLaunchKernelEx(&config, combine_kernel, args), "combine launch");
}

}  // namespace

std::string refusal(Shape s) {
  constexpr int kMaxGridDim = 65535;
  if (s.batch < 1 || s.q_tokens < 1 || s.heads < 1 || s.kv_heads < 1)
    return "batch, q_tokens, heads and kv_heads must each be at least 1";
  if (s.heads % s.kv_heads != 0)
    return std::to_string(s.heads) + " heads over " + std::to_string(s.kv_heads) +
           " kv heads: heads must be a multiple of kv_heads";
  if (s.head_dim != 64 && s.head_dim != 128) return "head dim " + std::to_string(s.head_dim) + ": give 64 or 128";
  if (s.page_size < 1 || s.pages_per_seq < 1 || s.pages < 1)
    return "page_size, pages_per_seq and pages must each be at least 1";
  if (static_cast<long long>(s.page_size) * s.pages_per_seq > std::numeric_limits<int>::max())
    return "page_size x pages_per_seq must fit an int (a sequence's keys)";
  const RowCut cut = row_cut(rows(s));
  if (s.batch > kMaxGridDim || static_cast<long long>(s.kv_heads) * cut.chunks > kMaxGridDim)
    return "batch and kv_heads x row chunks must each be at most " + std::to_string(kMaxGridDim) + " (the grid)";
  if (s.max_keys < 0) return "max_keys must be at least 0 (0: the block table's capacity)";
  return "";
}

int splits(Shape s, int resident) {
  const RowCut cut = row_cut(rows(s));
  return splits_for(s.batch * s.kv_heads * cut.chunks, max_keys(s), resident);
}

std::size_t scratch_bytes(Shape s, int splits) {
  if (splits <= 1) return 0;
  const std::size_t rows_total = std::size_t(s.batch) * s.q_tokens * s.heads;
  return splits * rows_total * (s.head_dim + 1) * sizeof(float);
}

int splits_here(Shape s) { return splits(s, resident_blocks(prepared(s))); }

Decode::Decode(const Tensors& t, Shape s, int splits_wanted, float* scratch) {
  if (std::string why = refusal(s); !why.empty()) throw std::invalid_argument("attention (decode): " + why);
  if (s.cache == Cache::e4m3 && (t.k_scale == nullptr || t.v_scale == nullptr))
    throw std::invalid_argument("attention (decode): an e4m3 cache needs k_scale and v_scale, a float per kv head");
  const Prepared p = prepared(s);
  const int n = splits_wanted > 0 ? std::min(splits_wanted, kMaxSplits) : decode::splits(s, resident_blocks(p));
  if (const std::size_t bytes = scratch_bytes(s, n); bytes > 0 && scratch == nullptr) {
    void* own = nullptr;
    check(cudaMalloc(&own, bytes), "scratch");
    scratch_ = std::shared_ptr<void>(own, [](void* q) { cudaFree(q); });
    scratch = static_cast<float*>(own);
  }
  float* o_part = n > 1 ? scratch : nullptr;
  float* lse_part = o_part ? o_part + std::size_t(n) * s.batch * s.q_tokens * s.heads * s.head_dim : nullptr;
  const Args args{t, s, n, 1.0f / std::sqrt(float(s.head_dim)), divider_for(s.page_size), o_part, lse_part};
  const dim3 grid(n, s.kv_heads * row_cut(rows(s)).chunks, s.batch);
  const int combine_blocks = s.batch * s.q_tokens * s.heads;  // a block per query row
  splits_ = n;
  int device = 0, major = 0;
  check(cudaGetDevice(&device), "device");
  check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "compute capability");
  const bool early_combine = major >= 9;
  launch_ = [=](cudaStream_t stream) {
    p.kernel<<<grid, kThreads, p.smem_bytes, stream>>>(args);
    if (n > 1) launch_combine(dim3(combine_blocks), stream, args, early_combine);
  };
}

}  // namespace attention::decode
