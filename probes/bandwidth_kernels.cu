#include "probes/bandwidth_kernels.hpp"
#include "src/errors.hpp"

namespace tkprobe::bandwidth {
namespace {

__device__ __forceinline__ uint4 pattern4(std::size_t i, std::uint32_t seed) {
  return make_uint4(pattern(4 * i, seed), pattern(4 * i + 1, seed), pattern(4 * i + 2, seed),
                    pattern(4 * i + 3, seed));
}

__device__ __forceinline__ std::uint32_t fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

__device__ __forceinline__ uint4 load_l2_only(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

__global__ void fill_kernel(uint4* buffer, std::size_t count, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count; i += std::size_t(gridDim.x) * blockDim.x) {
    buffer[i] = pattern4(i, seed);
  }
}

// Each thread takes kUnroll words a grid-width apart per trip, so a warp's loads stay coalesced
// and kUnroll of them are in flight before the first is used.
template <Stream S>
__global__ void __launch_bounds__(kThreads) streaming_kernel(const uint4* src, uint4* dst, std::size_t count,
                                                          std::uint32_t seed, std::uint32_t* sink) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  std::uint32_t acc = 0;
  for (; i + (kUnroll - 1) * stride < count; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if constexpr (S == Stream::write) {
        v[u] = pattern4(i + u * stride, seed);
      } else {
        v[u] = src[i + u * stride];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if constexpr (S == Stream::read) {
        acc ^= fold(v[u]);
      } else {
        dst[i + u * stride] = v[u];
      }
    }
  }
  for (; i < count; i += stride) {  // the tail a full trip would overrun
    if constexpr (S == Stream::read) acc ^= fold(src[i]);
    if constexpr (S == Stream::write) dst[i] = pattern4(i, seed);
    if constexpr (S == Stream::copy) dst[i] = src[i];
  }
  if constexpr (S == Stream::read) atomicXor(sink, acc);
}

__global__ void __launch_bounds__(kThreads) l2_read_kernel(const uint4* src, std::size_t count, int passes,
                                                           std::uint32_t* sink) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  std::uint32_t acc = 0;
  for (int pass = 0; pass < passes; ++pass) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count; i += stride) {
      acc ^= fold(load_l2_only(src + i));
    }
  }
  atomicXor(sink, acc);
}

__global__ void mismatch_kernel(const uint4* buffer, std::size_t count, std::uint32_t seed,
                                unsigned long long* mismatches) {
  unsigned long long bad = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count; i += std::size_t(gridDim.x) * blockDim.x) {
    const uint4 want = pattern4(i, seed), got = buffer[i];
    bad += (got.x != want.x) + (got.y != want.y) + (got.z != want.z) + (got.w != want.w);
  }
  if (bad) atomicAdd(mismatches, bad);
}

constexpr int kSimpleBlocks = 1024;

}  // namespace

void fill(uint4* buffer, std::size_t count, std::uint32_t seed, cudaStream_t stream) {
  fill_kernel<<<kSimpleBlocks, kThreads, 0, stream>>>(buffer, count, seed);
  TK_CUDA(cudaGetLastError());
}

const void* stream_kernel(Stream s) {
  switch (s) {
    case Stream::read:
      return reinterpret_cast<const void*>(&streaming_kernel<Stream::read>);
    case Stream::write:
      return reinterpret_cast<const void*>(&streaming_kernel<Stream::write>);
    default:
      return reinterpret_cast<const void*>(&streaming_kernel<Stream::copy>);
  }
}

void launch_stream(Stream s, const uint4* src, uint4* dst, std::size_t count, std::uint32_t seed,
                   std::uint32_t* sink, int blocks, std::size_t smem, cudaStream_t stream) {
  void* args[] = {&src, &dst, &count, &seed, &sink};
  TK_CUDA(cudaLaunchKernel(stream_kernel(s), dim3(blocks), dim3(kThreads), args, smem, stream));
}

void launch_l2_read(const uint4* src, std::size_t count, int passes, std::uint32_t* sink, int blocks,
                    cudaStream_t stream) {
  l2_read_kernel<<<blocks, kThreads, 0, stream>>>(src, count, passes, sink);
}

void count_mismatches(const uint4* buffer, std::size_t count, std::uint32_t seed,
                      unsigned long long* mismatches, cudaStream_t stream) {
  mismatch_kernel<<<kSimpleBlocks, kThreads, 0, stream>>>(buffer, count, seed, mismatches);
  TK_CUDA(cudaGetLastError());
}

}  // namespace tkprobe::bandwidth
