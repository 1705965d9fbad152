#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

#include "probes/common/based_reference.hpp"
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

// ---- errors against the reference ----

struct ErrorSums {
  double diff2, ref2;       // sums of (O - O_ref)^2 and O_ref^2
  unsigned worst_row_bits;  // max over rows of ||O_row - O_ref_row|| / ||O_ref_row|| as float bits: NaN's exceed every
                            // number's
};

__device__ __forceinline__ double warp_sum(double x) {
  for (int lane_mask = 16; lane_mask > 0; lane_mask /= 2) x += __shfl_xor_sync(0xffffffffu, x, lane_mask);
  return x;
}

// One warp per row of O: its error and size go to the global sums, its relative error to the
// worst row's, so a few wrong rows (a bad last chunk) cannot hide in the norm over millions.
__global__ void error_kernel(const bf16* o, const float* o_ref, std::size_t rows, int cols, ErrorSums* sums) {
  const int lane = threadIdx.x % 32;
  const std::size_t warps = std::size_t(gridDim.x) * blockDim.x / 32;
  double diff2 = 0, ref2 = 0;
  unsigned worst_row = 0;
  for (std::size_t row = (blockIdx.x * std::size_t(blockDim.x) + threadIdx.x) / 32; row < rows; row += warps) {
    double row_diff2 = 0, row_ref2 = 0;
    for (int x = lane; x < cols; x += 32) {
      const std::size_t i = row * cols + x;
      const double want = o_ref[i], d = double(__bfloat162float(o[i])) - want;
      row_diff2 += d * d;
      row_ref2 += want * want;
    }
    row_diff2 = warp_sum(row_diff2);
    row_ref2 = warp_sum(row_ref2);
    diff2 += row_diff2;
    ref2 += row_ref2;
    worst_row = max(worst_row, __float_as_uint(float(sqrt(row_diff2 / row_ref2))));
  }
  if (lane == 0) {
    atomicAdd(&sums->diff2, diff2);
    atomicAdd(&sums->ref2, ref2);
    atomicMax(&sums->worst_row_bits, worst_row);
  }
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
  const std::size_t rows = std::size_t(s.batch) * s.heads * s.seq;
  DeviceBuffer<ErrorSums> sums(1);
  sums.poison(0);
  error_kernel<<<1024, 256, 0, stream>>>(o, o_ref, rows, s.value_dim, sums.get());
  TK_CUDA(cudaGetLastError());
  TK_CUDA(cudaStreamSynchronize(stream));
  const ErrorSums h = sums.download()[0];
  return {std::sqrt(h.diff2 / h.ref2), std::bit_cast<float>(h.worst_row_bits)};
}

}  // namespace tkprobe::based_check
