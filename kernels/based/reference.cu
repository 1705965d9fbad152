#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/attention/row_errors.hpp"
#include "kernels/based/reference.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"

namespace tkprobe::based_check {
namespace {

using bf16 = __nv_bfloat16;

__global__ void scale_kernel(bf16* x, std::size_t count, float factor) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x) {
    x[i] = __float2bfloat16(__bfloat162float(x[i]) * factor);
  }
}

// ---- the reference forward pass ----

constexpr int kTile = 64;      // queries per block, and keys per step
constexpr int kThreads = 256;  // a 16 x 16 grid: each thread owns 4 query rows and a strided set of columns
constexpr int kF = based::kFeatureDim;

// Q and K rows are kF + 1 floats apart, so the 16 threads reading one row of K at once fall in
// different banks; the weights likewise.
template <int D>
struct Smem {
  float q[kTile][kF + 1];
  float k[kTile][kF + 1];
  float v[kTile][D];
  float w[kTile][kTile + 1];  // phi of the scores, 0 in a row's future
};

// Rows [row0, row0 + 64) of a [rows][Cols] bf16 matrix as floats; rows past `rows` read as zero.
template <int Cols, int Pitch>
__device__ void load_tile(float (*dst)[Pitch], const bf16* src, int row0, int rows) {
  for (int i = threadIdx.x; i < kTile * Cols; i += kThreads) {
    const int r = i / Cols, c = i % Cols;
    dst[r][c] = row0 + r < rows ? __bfloat162float(src[std::size_t(row0 + r) * Cols + c]) : 0.0f;
  }
}

// W = phi(Q K^T / 4) for this block's queries q0.. and keys k0.., zero where the key is in the
// query's future.
template <int D>
__device__ void weights(Smem<D>& sm, int q0, int k0) {
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const float scale = rsqrtf(float(kF));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int row = 4 * ty + i, key = tx + 16 * j;
      float dot = 0;
      for (int d = 0; d < kF; ++d) dot = fmaf(sm.q[row][d], sm.k[key][d], dot);
      const float x = dot * scale;
      sm.w[row][key] = k0 + key <= q0 + row ? 1.0f + x + 0.5f * x * x : 0.0f;
    }
}

// O += W V and the row sums of W for this thread's rows 4ty..4ty+3 and columns tx, tx + 16, ...
template <int D>
__device__ void accumulate(float (&o)[4][D / 16], float (&sum)[4], const Smem<D>& sm) {
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  for (int c = 0; c < kTile; ++c) {
    float w[4], v[D / 16];
    for (int i = 0; i < 4; ++i) w[i] = sm.w[4 * ty + i][c];
    for (int j = 0; j < D / 16; ++j) v[j] = sm.v[c][tx + 16 * j];
    for (int i = 0; i < 4; ++i) {
      sum[i] += w[i];
      for (int j = 0; j < D / 16; ++j) o[i][j] = fmaf(w[i], v[j], o[i][j]);
    }
  }
}

// One block per (64 queries, head, batch).
template <int D>
__global__ void __launch_bounds__(kThreads)
    reference_kernel(const bf16* q, const bf16* k, const bf16* v, float* o, based::Shape s) {
  extern __shared__ float4 smem_raw[];
  Smem<D>& sm = *reinterpret_cast<Smem<D>*>(smem_raw);
  const int q0 = blockIdx.x * kTile;
  const std::size_t rows = (std::size_t(blockIdx.z) * s.heads + blockIdx.y) * s.seq;  // row (batch, head, 0)

  load_tile<kF>(sm.q, q + rows * kF, q0, s.seq);
  float acc[4][D / 16] = {}, sum[4] = {};
  const int keys = min(s.seq, q0 + kTile);  // the causal mask hides keys past the tile
  for (int k0 = 0; k0 < keys; k0 += kTile) {
    __syncthreads();  // the previous step is done with K, V and W
    load_tile<kF>(sm.k, k + rows * kF, k0, s.seq);
    load_tile<D>(sm.v, v + rows * D, k0, s.seq);
    __syncthreads();
    weights(sm, q0, k0);
    __syncthreads();
    accumulate<D>(acc, sum, sm);
  }

  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  for (int i = 0; i < 4; ++i) {
    const int row = 4 * ty + i;
    if (q0 + row >= s.seq) break;
    float* out = o + (rows + q0 + row) * D;
    for (int j = 0; j < D / 16; ++j) out[tx + 16 * j] = s.normalize ? acc[i][j] / sum[i] : acc[i][j];
  }
}

template <int D>
void launch_reference(const bf16* q, const bf16* k, const bf16* v, float* o, based::Shape s, cudaStream_t stream) {
  const auto bytes = int(sizeof(Smem<D>));
  TK_CUDA(cudaFuncSetAttribute(reference_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  const dim3 grid((s.seq + kTile - 1) / kTile, s.heads, s.batch);
  reference_kernel<D><<<grid, kThreads, bytes, stream>>>(q, k, v, o, s);
  TK_CUDA(cudaGetLastError());
}

}  // namespace

void scale(bf16* x, std::size_t count, float factor, cudaStream_t stream) {
  scale_kernel<<<1024, 256, 0, stream>>>(x, count, factor);
  TK_CUDA(cudaGetLastError());
}

void reference_forward(const bf16* q, const bf16* k, const bf16* v, float* o, based::Shape s, cudaStream_t stream) {
  if (s.feature_dim != kF) {
    throw std::invalid_argument("based reference: feature dim " + std::to_string(s.feature_dim) + " (give 16)");
  }
  switch (s.value_dim) {
    case 64:
      return launch_reference<64>(q, k, v, o, s, stream);
    case 128:
      return launch_reference<128>(q, k, v, o, s, stream);
    default:
      throw std::invalid_argument("based reference: value dim " + std::to_string(s.value_dim) + " (64 or 128)");
  }
}

Errors compare_to_reference(const bf16* o, const float* o_ref, based::Shape s, cudaStream_t stream) {
  const check::RowErrors e =
      check::compare_rows(o, o_ref, std::size_t(s.batch) * s.heads * s.seq, s.value_dim, stream);
  return {e.rel_error, e.worst_row_error};
}

}  // namespace tkprobe::based_check
