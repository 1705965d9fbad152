#include "probes/timed_kernels/bandwidth_kernels.hpp"
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

template <Hint H>
__device__ __forceinline__ uint4 load(const uint4* p) {
  uint4 v;
  if constexpr (H == Hint::none) {
    v = *p;
  } else {
    asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  }
  return v;
}

template <Hint H>
__device__ __forceinline__ void store(uint4* p, uint4 v) {
  if constexpr (H == Hint::streaming) {
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
  } else {
    *p = v;
  }
}

__global__ void fill_kernel(uint4* buffer, std::size_t count, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count; i += std::size_t(gridDim.x) * blockDim.x) {
    buffer[i] = pattern4(i, seed);
  }
}

// Each thread takes Unroll words `step` apart per trip, so a warp's loads stay coalesced and
// Unroll of them are in flight before the first is used. grid_stride: step is the grid's
// width and the loop runs to the end; tiles: step is the block's width and the block's one
// tile is the whole range.
// With `spans`, thread 0 records where and when its block ran (the occupancy probe's residency).
template <Stream S, int Unroll, Hint H, Schedule Sch>
__global__ void __launch_bounds__(kThreads) streaming_kernel(const uint4* src, uint4* dst, std::size_t count,
                                                             std::uint32_t seed, std::uint32_t* sink,
                                                             BlockSpan* spans) {
  const ClockStamp began = spans ? clock_stamp() : ClockStamp{};
  const bool tiles = Sch == Schedule::tiles;
  const std::size_t step = tiles ? blockDim.x : std::size_t(gridDim.x) * blockDim.x;
  const std::size_t tile = std::size_t(Unroll) * blockDim.x;
  std::size_t i = tiles ? blockIdx.x * tile + threadIdx.x : blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  const std::size_t end = tiles ? std::min(count, (blockIdx.x + 1) * tile) : count;
  std::uint32_t acc = 0;
  for (; i + (Unroll - 1) * step < end; i += Unroll * step) {
    uint4 v[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      if constexpr (S == Stream::write) {
        v[u] = pattern4(i + u * step, seed);
      } else {
        v[u] = load<H>(src + i + u * step);
      }
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      if constexpr (S == Stream::read) {
        acc ^= fold(v[u]);
      } else {
        store<H>(dst + i + u * step, v[u]);
      }
    }
  }
  for (; i < end; i += step) {  // the tail a full trip would overrun
    if constexpr (S == Stream::read) acc ^= fold(load<H>(src + i));
    if constexpr (S == Stream::write) store<H>(dst + i, pattern4(i, seed));
    if constexpr (S == Stream::copy) store<H>(dst + i, load<H>(src + i));
  }
  if constexpr (S == Stream::read) {  // one atomic per warp, not per thread
    acc = __reduce_xor_sync(0xffffffffu, acc);
    if (threadIdx.x % 32 == 0) atomicXor(sink, acc);
  }
  if (spans) record_span(spans, began, clock_stamp());
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

template <Stream S, int Unroll, Hint H>
const void* pick(Schedule sch) {
  return sch == Schedule::tiles ? reinterpret_cast<const void*>(&streaming_kernel<S, Unroll, H, Schedule::tiles>)
                                : reinterpret_cast<const void*>(&streaming_kernel<S, Unroll, H, Schedule::grid_stride>);
}

template <Stream S, int Unroll>
const void* pick(Variant v) {
  return v.hint == Hint::streaming ? pick<S, Unroll, Hint::streaming>(v.schedule) : pick<S, Unroll, Hint::none>(v.schedule);
}

template <Stream S>
const void* pick(Variant v) {
  return v.loads_in_flight == 8 ? pick<S, 8>(v) : pick<S, 4>(v);
}

}  // namespace

void fill(uint4* buffer, std::size_t count, std::uint32_t seed, cudaStream_t stream) {
  fill_kernel<<<kSimpleBlocks, kThreads, 0, stream>>>(buffer, count, seed);
  TK_CUDA(cudaGetLastError());
}

const void* stream_kernel(Stream s, Variant v) {
  switch (s) {
    case Stream::read:
      return pick<Stream::read>(v);
    case Stream::write:
      return pick<Stream::write>(v);
    default:
      return pick<Stream::copy>(v);
  }
}

int blocks_for(Variant v, std::size_t count, int resident) {
  if (v.schedule == Schedule::grid_stride) return resident;
  const std::size_t tile = std::size_t(kThreads) * v.loads_in_flight;
  return static_cast<int>((count + tile - 1) / tile);
}

void launch_stream(Stream s, Variant v, const uint4* src, uint4* dst, std::size_t count, std::uint32_t seed,
                   std::uint32_t* sink, int blocks, std::size_t smem, cudaStream_t stream, BlockSpan* spans) {
  void* args[] = {&src, &dst, &count, &seed, &sink, &spans};
  TK_CUDA(cudaLaunchKernel(stream_kernel(s, v), dim3(blocks), dim3(kThreads), args, smem, stream));
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
