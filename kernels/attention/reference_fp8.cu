#include "kernels/attention/reference_fp8.hpp"

#include <cmath>
#include <cstring>

#include "src/device_buffer.hpp"
#include "src/errors.hpp"

namespace tkprobe::attention_check {
namespace {

constexpr float kE4m3Max = 448.0f;  // the largest finite e4m3

// amax as the bits of a non-negative float, whose order is the integers'.
__global__ void amax_kernel(const __nv_bfloat16* x, std::size_t count, unsigned* amax_bits) {
  float m = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count; i += std::size_t(gridDim.x) * blockDim.x)
    m = fmaxf(m, fabsf(__bfloat162float(x[i])));
  for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  if (threadIdx.x % 32 == 0) atomicMax(amax_bits, __float_as_uint(m));
}

__global__ void quantize_kernel(__nv_bfloat16* x, __nv_fp8_e4m3* out, std::size_t count, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count; i += std::size_t(gridDim.x) * blockDim.x) {
    const __nv_fp8_e4m3 q(__bfloat162float(x[i]) / scale);  // round to nearest, saturating (satfinite)
    out[i] = q;
    x[i] = __float2bfloat16(float(q) * scale);  // exact: 4 significant bits times a power of two
  }
}

__global__ void quantize_per_head_kernel(const __nv_bfloat16* x, __nv_fp8_e4m3* out, std::size_t count, int kv_heads,
                                         int head_dim, const float* scales) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __nv_fp8_e4m3(__bfloat162float(x[i]) / scales[i / head_dim % kv_heads]);
}

// kv head h's scale: 2^(kLeastExponent + (first + h) % kExponents).
std::vector<float> e4m3_head_scales(int kv_heads, int first) {
  constexpr int kLeastExponent = -6, kExponents = 3;  // 2^-6: N(0, 1) past 7 sigma still under 448
  std::vector<float> scales(kv_heads);
  for (int h = 0; h < kv_heads; ++h) scales[h] = std::exp2(float(kLeastExponent + (first + h) % kExponents));
  return scales;
}

}  // namespace

E4m3KvCache::E4m3KvCache(const __nv_bfloat16* k_bf16, const __nv_bfloat16* v_bf16, std::size_t count, int kv_heads,
                         int head_dim, cudaStream_t stream)
    : k(count), v(count), k_scale(kv_heads), v_scale(kv_heads) {
  k_scale.upload(e4m3_head_scales(kv_heads, 0));
  v_scale.upload(e4m3_head_scales(kv_heads, 1));
  quantize_per_head_kernel<<<1024, 256, 0, stream>>>(k_bf16, k.get(), count, kv_heads, head_dim, k_scale.get());
  quantize_per_head_kernel<<<1024, 256, 0, stream>>>(v_bf16, v.get(), count, kv_heads, head_dim, v_scale.get());
  TK_CUDA(cudaGetLastError());
}

float e4m3_scale_for(float amax) {
  if (!(amax > 0) || !std::isfinite(amax)) return 1.0f;
  return std::exp2(std::ceil(std::log2(amax / kE4m3Max)));
}

float quantize_e4m3(__nv_bfloat16* x, __nv_fp8_e4m3* out, std::size_t count, cudaStream_t stream) {
  DeviceBuffer<unsigned> amax(1);
  TK_CUDA(cudaMemsetAsync(amax.get(), 0, sizeof(unsigned), stream));
  amax_kernel<<<1024, 256, 0, stream>>>(x, count, amax.get());
  TK_CUDA(cudaGetLastError());
  unsigned bits = 0;
  TK_CUDA(cudaMemcpyAsync(&bits, amax.get(), sizeof bits, cudaMemcpyDeviceToHost, stream));
  TK_CUDA(cudaStreamSynchronize(stream));
  float amax_value;
  static_assert(sizeof amax_value == sizeof bits);
  std::memcpy(&amax_value, &bits, sizeof bits);
  const float scale = e4m3_scale_for(amax_value);
  quantize_kernel<<<1024, 256, 0, stream>>>(x, out, count, scale);
  TK_CUDA(cudaGetLastError());
  return scale;
}

}  // namespace tkprobe::attention_check
