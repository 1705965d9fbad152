#include "kernels/attention/reference.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

#include "src/device_buffer.hpp"
#include "src/errors.hpp"

namespace tkprobe::attention_check {
namespace {

using bf16 = __nv_bfloat16;

// ---- random inputs ----

// SplitMix64: the i-th output of a generator seeded with `seed` is a pure function of (seed, i).
__device__ std::uint64_t splitmix64(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__global__ void fill_normal_kernel(bf16* out, std::size_t count, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint64_t h = splitmix64(seed, i);
    // Two 23-bit uniforms at odd multiples of 2^-24: u1 is never 0 or 1 and 2 u2 never 1/2 or 3/2,
    // so the radius is finite and positive and the cosine non-zero: no value is ever exactly 0.
    const float u1 = (float(h >> 41) + 0.5f) * 0x1p-23f;
    const float u2 = (float(h & 0x7fffff) + 0.5f) * 0x1p-23f;
    out[i] = __float2bfloat16(sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2));
  }
}

// ---- the reference forward pass ----

constexpr int kTile = 64;      // queries per block, and keys per step
constexpr int kThreads = 256;  // a 16 x 16 grid: each thread owns 4 query rows and a strided set of columns

// Q and K rows are D + 1 floats apart, so the 16 threads reading one column of K at once (and the
// two rows of Q a warp reads) fall in different banks; P likewise.
template <int D>
struct Smem {
  float q[kTile][D + 1];
  float k[kTile][D + 1];
  float v[kTile][D];
  float p[kTile][kTile + 1];          // scores, then their exponentials
  float m[kTile], l[kTile], alpha[kTile];  // per query row: running max, running sum, rescale factor
};

// Rows [row0, row0 + 64) of a [rows][D] bf16 matrix as floats; rows past `rows` read as zero.
template <int D, int Pitch>
__device__ void load_tile(float (*dst)[Pitch], const bf16* src, int row0, int rows) {
  for (int i = threadIdx.x; i < kTile * D / 2; i += kThreads) {
    const int r = i / (D / 2), c = 2 * (i % (D / 2));
    float2 f = make_float2(0, 0);
    if (row0 + r < rows) f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(src + std::size_t(row0 + r) * D + c));
    dst[r][c] = f.x;
    dst[r][c + 1] = f.y;
  }
}

// P = Q K^T / sqrt(D) for this block's queries and keys [k0, k0 + 64), masked keys at -inf.
template <int D>
__device__ void scores(Smem<D>& sm, int q0, int k0, attention::Mask mask, float scale) {
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc[4][4] = {};
  for (int d = 0; d < D; ++d) {
    float a[4], b[4];
    for (int i = 0; i < 4; ++i) a[i] = sm.q[4 * ty + i][d];
    for (int j = 0; j < 4; ++j) b[j] = sm.k[tx + 16 * j][d];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int query = q0 + 4 * ty + i, key = k0 + tx + 16 * j;
      sm.p[4 * ty + i][tx + 16 * j] = mask.attends(query, key) ? acc[i][j] * scale : -INFINITY;
    }
}

// The online softmax step: four neighbouring lanes share a row. exp(-inf - max) = 0 drops the
// masked keys; a row that has seen no key yet keeps max -inf and sum 0, its exponentials taken
// against 0 rather than -inf (which would make -inf - -inf = NaN).
template <int D>
__device__ void softmax_step(Smem<D>& sm) {
  const int row = threadIdx.x / 4, part = threadIdx.x % 4;
  float* p = &sm.p[row][16 * part];
  const float m_old = sm.m[row];
  float top = -INFINITY;
  for (int c = 0; c < 16; ++c) top = fmaxf(top, p[c]);
  top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 1));
  top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 2));
  const float m_new = fmaxf(m_old, top);
  const float m_base = m_new == -INFINITY ? 0.0f : m_new;
  float sum = 0;
  for (int c = 0; c < 16; ++c) {
    p[c] = expf(p[c] - m_base);
    sum += p[c];
  }
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  sum += __shfl_xor_sync(0xffffffffu, sum, 2);
  // Every lane has read m_old before lane 0 replaces it. The shuffles already order the two, but
  // compute-sanitizer's racecheck counts only barriers as ordering shared-memory accesses.
  __syncwarp();
  if (part == 0) {
    const float alpha = expf(m_old - m_base);  // 0 until the row sees a key (m_old = -inf)
    sm.alpha[row] = alpha;
    sm.l[row] = sm.l[row] * alpha + sum;
    sm.m[row] = m_new;
  }
}

// O = O * alpha + P V for this thread's rows 4ty..4ty+3 and columns tx, tx + 16, ...
template <int D>
__device__ void accumulate(float (&o)[4][D / 16], const Smem<D>& sm) {
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < D / 16; ++j) o[i][j] *= sm.alpha[4 * ty + i];
  for (int c = 0; c < kTile; ++c) {
    float p[4], v[D / 16];
    for (int i = 0; i < 4; ++i) p[i] = sm.p[4 * ty + i][c];
    for (int j = 0; j < D / 16; ++j) v[j] = sm.v[c][tx + 16 * j];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < D / 16; ++j) o[i][j] = fmaf(p[i], v[j], o[i][j]);
  }
}

// One block per (64 queries, head, batch).
template <int D>
__global__ void __launch_bounds__(kThreads)
    reference_kernel(const bf16* q, const bf16* k, const bf16* v, float* o, float* lse, attention::Shape s) {
  extern __shared__ float4 smem_raw[];
  Smem<D>& sm = *reinterpret_cast<Smem<D>*>(smem_raw);
  const int q0 = blockIdx.x * kTile, head = blockIdx.y, batch = blockIdx.z;
  const int kv_head = head / (s.heads / s.kv_heads);
  const attention::Mask mask = attention::mask_of(s);
  const std::size_t q_rows = (std::size_t(batch) * s.heads + head) * s.seq;  // row (batch, head, 0)
  const std::size_t kv_rows = (std::size_t(batch) * s.kv_heads + kv_head) * mask.keys;
  const float scale = rsqrtf(float(D));

  load_tile<D>(sm.q, q + q_rows * D, q0, s.seq);
  if (threadIdx.x < kTile) {
    sm.m[threadIdx.x] = -INFINITY;
    sm.l[threadIdx.x] = 0;
  }
  float acc[4][D / 16] = {};
  const int key_end = mask.key_end(min(s.seq, q0 + kTile));  // the causal mask hides the keys past it
  for (int k0 = 0; k0 < key_end; k0 += kTile) {
    __syncthreads();  // the previous step is done with K, V and P
    load_tile<D>(sm.k, k + kv_rows * D, k0, mask.keys);
    load_tile<D>(sm.v, v + kv_rows * D, k0, mask.keys);
    __syncthreads();
    scores(sm, q0, k0, mask, scale);
    __syncthreads();
    softmax_step(sm);
    __syncthreads();
    accumulate<D>(acc, sm);
  }

  __syncthreads();  // a block that saw no key has not synchronised since setting m and l
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  for (int i = 0; i < 4; ++i) {
    const int row = 4 * ty + i;
    if (q0 + row >= s.seq) break;
    const float l = sm.l[row];  // 0 for a row attending no key: O = 0, LSE = +inf
    float* out = o + (q_rows + q0 + row) * D;
    for (int j = 0; j < D / 16; ++j) out[tx + 16 * j] = l > 0 ? acc[i][j] / l : 0.0f;
    if (tx == 0) lse[q_rows + q0 + row] = l > 0 ? sm.m[row] + logf(l) : INFINITY;
  }
}

template <int D>
void launch_reference(const bf16* q, const bf16* k, const bf16* v, float* o, float* lse, attention::Shape s,
                      cudaStream_t stream) {
  const auto bytes = int(sizeof(Smem<D>));
  TK_CUDA(cudaFuncSetAttribute(reference_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  const dim3 grid((s.seq + kTile - 1) / kTile, s.heads, s.batch);
  reference_kernel<D><<<grid, kThreads, bytes, stream>>>(q, k, v, o, lse, s);
  TK_CUDA(cudaGetLastError());
}

// ---- the reference backward pass ----

// Both backward kernels' shared memory: four 64-row tiles and the step's P and dS.
template <int D>
struct BackwardSmem {
  float q[kTile][D + 1], d_o[kTile][D + 1], k[kTile][D + 1], v[kTile][D + 1];
  float p[kTile][kTile + 1], ds[kTile][kTile + 1];  // [query][key]
  float lse[kTile], delta[kTile];                   // per query row
};

template <int D>
constexpr int kBackwardSmemBytes = int(sizeof(BackwardSmem<D>));

// P and dS for queries [q0, q0 + 64) and keys [k0, k0 + 64): each thread 4 queries (4ty..) by 4
// keys (tx, tx + 16, ...). Pairs not attended (either past the sequences, or causal) get P = 0,
// so a row attending no key (LSE +inf) has P = 0 throughout.
template <int D>
__device__ void score_gradients(BackwardSmem<D>& sm, int q0, int k0, int seq, attention::Mask mask, float scale) {
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float sc[4][4] = {}, dp[4][4] = {};
  for (int d = 0; d < D; ++d) {
    float a[4], g[4], b[4], c[4];
    for (int i = 0; i < 4; ++i) {
      a[i] = sm.q[4 * ty + i][d];
      g[i] = sm.d_o[4 * ty + i][d];
    }
    for (int j = 0; j < 4; ++j) {
      b[j] = sm.k[tx + 16 * j][d];
      c[j] = sm.v[tx + 16 * j][d];
    }
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        sc[i][j] = fmaf(a[i], b[j], sc[i][j]);
        dp[i][j] = fmaf(g[i], c[j], dp[i][j]);
      }
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int row = 4 * ty + i, col = tx + 16 * j, query = q0 + row, key = k0 + col;
      const bool seen = query < seq && mask.attends(query, key);
      const float p = seen ? expf(sc[i][j] * scale - sm.lse[row]) : 0.0f;
      sm.p[row][col] = p;
      sm.ds[row][col] = p * (dp[i][j] - sm.delta[row]);
    }
}

// dQ, one block per (64 queries, head, batch): D = rowsum(dO * O) first (written to `delta` for
// the dK/dV kernel), then dQ += dS K over the key tiles in order.
template <int D>
__global__ void __launch_bounds__(kThreads)
    reference_dq_kernel(const bf16* q, const bf16* k, const bf16* v, const bf16* o, const bf16* d_o, const float* lse,
                        float* dq, float* delta, attention::Shape s) {
  extern __shared__ float4 smem_raw[];
  BackwardSmem<D>& sm = *reinterpret_cast<BackwardSmem<D>*>(smem_raw);
  const int q0 = blockIdx.x * kTile, head = blockIdx.y, batch = blockIdx.z;
  const int kv_head = head / (s.heads / s.kv_heads);
  const attention::Mask mask = attention::mask_of(s);
  const std::size_t q_rows = (std::size_t(batch) * s.heads + head) * s.seq;
  const std::size_t kv_rows = (std::size_t(batch) * s.kv_heads + kv_head) * mask.keys;
  const float scale = rsqrtf(float(D));

  load_tile<D>(sm.q, q + q_rows * D, q0, s.seq);
  load_tile<D>(sm.d_o, d_o + q_rows * D, q0, s.seq);
  load_tile<D>(sm.k, o + q_rows * D, q0, s.seq);  // O, in K's place until the first key tile
  __syncthreads();
  if (threadIdx.x < kTile) {
    // One thread per row, in the order score_gradients sums dP, so that where O = V (one key
    // attended) dP - D is exactly 0, as it is in exact arithmetic.
    const int row = threadIdx.x;
    float sum = 0;
    for (int d = 0; d < D; ++d) sum = fmaf(sm.d_o[row][d], sm.k[row][d], sum);
    sm.delta[row] = sum;
    sm.lse[row] = q0 + row < s.seq ? lse[q_rows + q0 + row] : 0.0f;
    if (q0 + row < s.seq) delta[q_rows + q0 + row] = sum;
  }
  float acc[4][D / 16] = {};
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int key_end = mask.key_end(min(s.seq, q0 + kTile));
  for (int k0 = 0; k0 < key_end; k0 += kTile) {
    __syncthreads();  // the previous step (or D) is done with K
    load_tile<D>(sm.k, k + kv_rows * D, k0, mask.keys);
    load_tile<D>(sm.v, v + kv_rows * D, k0, mask.keys);
    __syncthreads();
    score_gradients(sm, q0, k0, s.seq, mask, scale);
    __syncthreads();
    for (int c = 0; c < kTile; ++c) {
      float g[4], b[D / 16];
      for (int i = 0; i < 4; ++i) g[i] = sm.ds[4 * ty + i][c];
      for (int j = 0; j < D / 16; ++j) b[j] = sm.k[c][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < D / 16; ++j) acc[i][j] = fmaf(g[i], b[j], acc[i][j]);
    }
  }
  for (int i = 0; i < 4; ++i) {
    const int row = q0 + 4 * ty + i;
    if (row >= s.seq) break;
    for (int j = 0; j < D / 16; ++j) dq[(q_rows + row) * D + tx + 16 * j] = acc[i][j] * scale;
  }
}

// dK and dV, one block per (64 keys, key/value head, batch): over the group's query heads, and
// their query tiles that see these keys, in order.
template <int D>
__global__ void __launch_bounds__(kThreads)
    reference_dkdv_kernel(const bf16* q, const bf16* k, const bf16* v, const bf16* d_o, const float* lse,
                          const float* delta, float* dk, float* dv, attention::Shape s) {
  extern __shared__ float4 smem_raw[];
  BackwardSmem<D>& sm = *reinterpret_cast<BackwardSmem<D>*>(smem_raw);
  const int k0 = blockIdx.x * kTile, kv_head = blockIdx.y, batch = blockIdx.z;
  const int group = s.heads / s.kv_heads;
  const attention::Mask mask = attention::mask_of(s);
  const std::size_t kv_rows = (std::size_t(batch) * s.kv_heads + kv_head) * mask.keys;
  const float scale = rsqrtf(float(D));

  load_tile<D>(sm.k, k + kv_rows * D, k0, mask.keys);
  load_tile<D>(sm.v, v + kv_rows * D, k0, mask.keys);
  float dk_acc[4][D / 16] = {}, dv_acc[4][D / 16] = {};  // keys 4ty.., columns tx, tx + 16, ...
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  for (int head = kv_head * group; head < (kv_head + 1) * group; ++head) {
    const std::size_t q_rows = (std::size_t(batch) * s.heads + head) * s.seq;
    for (int q0 = mask.first_query(k0); q0 < s.seq; q0 += kTile) {  // causal: earlier queries see none of these keys
      __syncthreads();  // the previous step is done with Q, dO, P and dS
      load_tile<D>(sm.q, q + q_rows * D, q0, s.seq);
      load_tile<D>(sm.d_o, d_o + q_rows * D, q0, s.seq);
      if (threadIdx.x < kTile) {
        const bool real = q0 + int(threadIdx.x) < s.seq;
        sm.lse[threadIdx.x] = real ? lse[q_rows + q0 + threadIdx.x] : 0.0f;
        sm.delta[threadIdx.x] = real ? delta[q_rows + q0 + threadIdx.x] : 0.0f;
      }
      __syncthreads();
      score_gradients(sm, q0, k0, s.seq, mask, scale);
      __syncthreads();
      for (int c = 0; c < kTile; ++c) {
        float p[4], g[4], x[D / 16], y[D / 16];
        for (int i = 0; i < 4; ++i) {
          p[i] = sm.p[c][4 * ty + i];
          g[i] = sm.ds[c][4 * ty + i];
        }
        for (int j = 0; j < D / 16; ++j) {
          x[j] = sm.d_o[c][tx + 16 * j];
          y[j] = sm.q[c][tx + 16 * j];
        }
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < D / 16; ++j) {
            dv_acc[i][j] = fmaf(p[i], x[j], dv_acc[i][j]);
            dk_acc[i][j] = fmaf(g[i], y[j], dk_acc[i][j]);
          }
      }
    }
  }
  for (int i = 0; i < 4; ++i) {
    const int row = k0 + 4 * ty + i;
    if (row >= mask.keys) break;
    for (int j = 0; j < D / 16; ++j) {
      dk[(kv_rows + row) * D + tx + 16 * j] = dk_acc[i][j] * scale;
      dv[(kv_rows + row) * D + tx + 16 * j] = dv_acc[i][j];
    }
  }
}

template <int D>
void launch_reference_backward(const bf16* q, const bf16* k, const bf16* v, const bf16* o, const bf16* d_o,
                               const float* lse, float* dq, float* dk, float* dv, float* delta, attention::Shape s,
                               cudaStream_t stream) {
  TK_CUDA(cudaFuncSetAttribute(reference_dq_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               kBackwardSmemBytes<D>));
  TK_CUDA(cudaFuncSetAttribute(reference_dkdv_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               kBackwardSmemBytes<D>));
  const int query_tiles = (s.seq + kTile - 1) / kTile, key_tiles = (attention::keys(s) + kTile - 1) / kTile;
  reference_dq_kernel<D><<<dim3(query_tiles, s.heads, s.batch), kThreads, kBackwardSmemBytes<D>, stream>>>(
      q, k, v, o, d_o, lse, dq, delta, s);
  TK_CUDA(cudaGetLastError());
  reference_dkdv_kernel<D><<<dim3(key_tiles, s.kv_heads, s.batch), kThreads, kBackwardSmemBytes<D>, stream>>>(
      q, k, v, d_o, lse, delta, dk, dv, s);
  TK_CUDA(cudaGetLastError());
}

// ---- errors against the reference ----

// |LSE - LSE_ref|, 0 where they are equal: a row attending no key has LSE +inf in both, and
// inf - inf would be NaN. Any other infinity or NaN stays one.
__device__ float lse_difference(float lse, float lse_ref) { return lse == lse_ref ? 0.0f : fabsf(lse - lse_ref); }

// max |LSE - LSE_ref| as float bits, NaN's bits exceeding every number's.
__global__ void lse_error_kernel(const float* lse, const float* lse_ref, std::size_t rows, unsigned* worst_bits) {
  unsigned worst = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < rows; i += std::size_t(gridDim.x) * blockDim.x)
    worst = max(worst, __float_as_uint(lse_difference(lse[i], lse_ref[i])));
  worst = __reduce_max_sync(0xffffffffu, worst);
  if (threadIdx.x % 32 == 0) atomicMax(worst_bits, worst);
}

}  // namespace

void fill_normal(bf16* out, std::size_t count, std::uint64_t seed, cudaStream_t stream) {
  fill_normal_kernel<<<1024, 256, 0, stream>>>(out, count, seed);
  TK_CUDA(cudaGetLastError());
}

void reference_forward(const bf16* q, const bf16* k, const bf16* v, float* o, float* lse, attention::Shape s,
                       cudaStream_t stream) {
  switch (s.head_dim) {
    case 64:
      return launch_reference<64>(q, k, v, o, lse, s, stream);
    case 96:
      return launch_reference<96>(q, k, v, o, lse, s, stream);
    case 128:
      return launch_reference<128>(q, k, v, o, lse, s, stream);
    case 256:
      return launch_reference<256>(q, k, v, o, lse, s, stream);
    default:
      throw std::invalid_argument("attention reference: head dim " + std::to_string(s.head_dim) +
                                  " (64, 96, 128 or 256)");
  }
}

Errors compare_to_reference(const bf16* o, const float* lse, const float* o_ref, const float* lse_ref,
                            attention::Shape s, cudaStream_t stream) {
  const std::size_t rows = std::size_t(s.batch) * s.heads * s.seq;
  const check::RowErrors e = check::compare_rows(o, o_ref, rows, s.head_dim, stream);
  DeviceBuffer<unsigned> lse_bits(1);
  lse_bits.poison(0);
  lse_error_kernel<<<1024, 256, 0, stream>>>(lse, lse_ref, rows, lse_bits.get());
  TK_CUDA(cudaGetLastError());
  return {e.rel_error, std::bit_cast<float>(lse_bits.download()[0]), e.worst_row_error};
}

void reference_backward(const bf16* q, const bf16* k, const bf16* v, const bf16* o, const bf16* d_o, const float* lse,
                        float* dq, float* dk, float* dv, float* delta, attention::Shape s, cudaStream_t stream) {
  switch (s.head_dim) {
    case 64:
      return launch_reference_backward<64>(q, k, v, o, d_o, lse, dq, dk, dv, delta, s, stream);
    case 128:
      return launch_reference_backward<128>(q, k, v, o, d_o, lse, dq, dk, dv, delta, s, stream);
    default:
      throw std::invalid_argument("attention backward reference: head dim " + std::to_string(s.head_dim) +
                                  " (64 or 128)");
  }
}

BackwardErrors compare_backward(const bf16* dq, const bf16* dk, const bf16* dv, const float* dq_ref,
                                const float* dk_ref, const float* dv_ref, attention::Shape s, cudaStream_t stream) {
  const std::size_t q_rows = std::size_t(s.batch) * s.heads * s.seq;
  const std::size_t kv_rows = std::size_t(s.batch) * s.kv_heads * attention::keys(s);
  return {check::compare_rows(dq, dq_ref, q_rows, s.head_dim, stream),
          check::compare_rows(dk, dk_ref, kv_rows, s.head_dim, stream),
          check::compare_rows(dv, dv_ref, kv_rows, s.head_dim, stream)};
}

}  // namespace tkprobe::attention_check
