#include "probes/tma-reduce/tma_reduce_kernels.hpp"

#include <stdexcept>

#include "src/errors.hpp"
#include "tk/arch/shared_memory.cuh"
#include "tk/arch/tma.cuh"

namespace tkprobe::tma_reduce {
namespace {

inline constexpr int kWordsPerThread = kTileWords / kThreads;

// Word w of block b's tile: one f32, or two bf16 with element 2w in the low half. contribution()'s
// values are exact in bf16, so a bf16 is the high half of the f32 (the low half is zero).
template <Op kOp, Dtype kType>
__device__ std::uint32_t tile_word(const Launch& l, int block, int w) {
  if constexpr (kType == Dtype::f32) {
    return __float_as_uint(contribution(kOp, l.add_stride, block, w));
  } else {
    const std::uint32_t lo = __float_as_uint(contribution(kOp, l.add_stride, block, 2 * w)) >> 16;
    const std::uint32_t hi = __float_as_uint(contribution(kOp, l.add_stride, block, 2 * w + 1)) >> 16;
    return lo | hi << 16;
  }
}

// One bulk reduction of the whole tile at shared address `src` into `dst`.
template <Op kOp, Dtype kType>
__device__ void bulk_reduce(void* dst, std::uint32_t src) {
  if constexpr (kType == Dtype::f32) {
    tk::arch::bulk_reduce_add_f32(static_cast<float*>(dst), src, kTileBytes);
  } else if constexpr (kOp == Op::add) {
    tk::arch::bulk_reduce_add_bf16(dst, src, kTileBytes);
  } else if constexpr (kOp == Op::min) {
    tk::arch::bulk_reduce_min_bf16(dst, src, kTileBytes);
  } else {
    tk::arch::bulk_reduce_max_bf16(dst, src, kTileBytes);
  }
}

// One thread's reduction of one word (one f32 or two bf16) into `dst`.
template <Op kOp, Dtype kType>
__device__ void red(std::uint32_t* dst, std::uint32_t word) {
  if constexpr (kType == Dtype::f32) {
    tk::arch::red_add_f32(reinterpret_cast<float*>(dst), __uint_as_float(word));
  } else if constexpr (kOp == Op::add) {
    tk::arch::red_add_bf16x2(dst, word);
  } else if constexpr (kOp == Op::min) {
    tk::arch::red_min_bf16x2(dst, word);
  } else {
    tk::arch::red_max_bf16x2(dst, word);
  }
}

// One thread issues each pass's bulk reduction; the next pass may reuse the tile once the copy
// engine has read it (wait_group.read), and the kernel ends only when every write is performed.
template <Op kOp, Dtype kType>
__global__ void __launch_bounds__(kThreads) bulk_kernel(Launch l, std::uint32_t* dst) {
  static_assert(has_instructions(kOp, kType));
  __shared__ alignas(128) std::uint32_t tile[kTileWords];
  for (int w = threadIdx.x; w < kTileWords; w += kThreads) tile[w] = tile_word<kOp, kType>(l, blockIdx.x, w);
  tk::arch::fence_proxy_async();  // the copy engine reads the tile through the async proxy
  __syncthreads();
  if (threadIdx.x != 0) return;
  std::uint32_t* target = dst + std::size_t(blockIdx.x % l.targets) * kTileWords;
  const std::uint32_t src = tk::arch::shared_address(tile);
  for (int pass = 0; pass < l.passes; ++pass) {
    bulk_reduce<kOp, kType>(target, src);
    tk::arch::bulk_commit();
  }
  tk::arch::bulk_wait<0>();
}

// Every thread reduces its share of the tile, held in registers, one word per instruction, coalesced
// by warps (consecutive threads, consecutive words).
template <Op kOp, Dtype kType>
__global__ void __launch_bounds__(kThreads) atomic_kernel(Launch l, std::uint32_t* dst) {
  static_assert(has_instructions(kOp, kType));
  std::uint32_t* target = dst + std::size_t(blockIdx.x % l.targets) * kTileWords + threadIdx.x;
  std::uint32_t words[kWordsPerThread];
#pragma unroll
  for (int j = 0; j < kWordsPerThread; ++j) words[j] = tile_word<kOp, kType>(l, blockIdx.x, threadIdx.x + j * kThreads);
  for (int pass = 0; pass < l.passes; ++pass) {
#pragma unroll
    for (int j = 0; j < kWordsPerThread; ++j) red<kOp, kType>(target + j * kThreads, words[j]);
  }
}

template <Op kOp, Dtype kType>
void launch(Method m, const Launch& l, void* dst, cudaStream_t stream) {
  auto* words = static_cast<std::uint32_t*>(dst);
  if (m == Method::bulk) {
    bulk_kernel<kOp, kType><<<l.blocks, kThreads, 0, stream>>>(l, words);
  } else {
    atomic_kernel<kOp, kType><<<l.blocks, kThreads, 0, stream>>>(l, words);
  }
}

}  // namespace

void launch_reduce(Method m, Op op, Dtype t, const Launch& l, void* dst, cudaStream_t stream) {
  if (!has_instructions(op, t)) throw std::invalid_argument("tma-reduce: no min or max instruction for f32");
  if (t == Dtype::f32) {
    launch<Op::add, Dtype::f32>(m, l, dst, stream);
  } else if (op == Op::add) {
    launch<Op::add, Dtype::bf16>(m, l, dst, stream);
  } else if (op == Op::min) {
    launch<Op::min, Dtype::bf16>(m, l, dst, stream);
  } else {
    launch<Op::max, Dtype::bf16>(m, l, dst, stream);
  }
  TK_CUDA(cudaGetLastError());
}

}  // namespace tkprobe::tma_reduce
