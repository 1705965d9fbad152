#include "kernels/attention/row_errors.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "src/device_buffer.hpp"
#include "src/errors.hpp"

namespace tkprobe::check {
namespace {

using bf16 = __nv_bfloat16;

// One row against its reference.
struct RowStats {
  double diff2, ref2;     // sums of (g - g_ref)^2 and g_ref^2
  unsigned max_abs_bits;  // max |g - g_ref| as float bits: NaN's exceed every number's
  unsigned non_finite;    // elements of g that are NaN or infinite
};

// A warp per row of `d` elements, striding over the rows.
__global__ void row_stats_kernel(const bf16* g, const float* ref, std::size_t rows, int d, RowStats* out) {
  const int lane = threadIdx.x % 32;
  const std::size_t warps = std::size_t(gridDim.x) * blockDim.x / 32;
  for (std::size_t r = (blockIdx.x * std::size_t(blockDim.x) + threadIdx.x) / 32; r < rows; r += warps) {
    double diff2 = 0, ref2 = 0;
    unsigned worst = 0, bad = 0;
    for (int c = lane; c < d; c += 32) {
      const float x = __bfloat162float(g[r * d + c]), want = ref[r * d + c];
      const double e = double(x) - want;
      diff2 += e * e;
      ref2 += double(want) * want;
      worst = max(worst, __float_as_uint(fabsf(x - want)));
      bad += !isfinite(x);
    }
    for (int lane_mask = 16; lane_mask > 0; lane_mask /= 2) {
      diff2 += __shfl_xor_sync(0xffffffffu, diff2, lane_mask);
      ref2 += __shfl_xor_sync(0xffffffffu, ref2, lane_mask);
    }
    worst = __reduce_max_sync(0xffffffffu, worst);
    bad = __reduce_add_sync(0xffffffffu, bad);
    if (lane == 0) out[r] = {diff2, ref2, worst, bad};
  }
}

// The figures of RowErrors from each row's, NaN-propagating.
RowErrors summarize(const std::vector<RowStats>& rows) {
  const auto nan_or_max = [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); };
  double diff2 = 0, ref2 = 0, max_abs = 0;
  std::size_t non_finite = 0;
  for (const RowStats& r : rows) {
    diff2 += r.diff2;
    ref2 += r.ref2;
    max_abs = nan_or_max(max_abs, std::bit_cast<float>(r.max_abs_bits));
    non_finite += r.non_finite;
  }
  const auto ratio = [](double num2, double den2) { return num2 == 0 && den2 == 0 ? 0.0 : std::sqrt(num2 / den2); };
  const double floor2 = kRowFloor * kRowFloor * ref2 / double(rows.size());
  double worst = 0;
  for (const RowStats& r : rows) worst = nan_or_max(worst, ratio(r.diff2, std::max(r.ref2, floor2)));
  return {ratio(diff2, ref2), worst, max_abs, non_finite};
}

}  // namespace

RowErrors compare_rows(const bf16* got, const float* ref, std::size_t rows, int cols, cudaStream_t stream) {
  DeviceBuffer<RowStats> stats(rows);
  row_stats_kernel<<<1024, 256, 0, stream>>>(got, ref, rows, cols, stats.get());
  TK_CUDA(cudaGetLastError());
  TK_CUDA(cudaStreamSynchronize(stream));
  return summarize(stats.download());
}

}  // namespace tkprobe::check
