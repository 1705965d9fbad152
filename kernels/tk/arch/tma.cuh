#pragma once
// The TMA's asynchronous bulk copies (PTX ISA 9.7.9.25 "cp.async.bulk", "cp.async.bulk.tensor"):
// issued by one thread, carried out by the copy engine. Loads into shared memory complete on an
// mbarrier (tk/arch/mbarrier.cuh) with their byte count; stores from shared memory are tracked
// in bulk groups of the issuing thread. Sizes and addresses are multiples of 16 bytes.
#include <cuda.h>

#include <cstdint>

namespace tk::arch {

// A box of a 2-D tensor map at element coordinates (col, row) into shared memory at `dst`.
__device__ __forceinline__ void tma_load_2d(std::uint32_t dst, const CUtensorMap& map, int col, int row,
                                            std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::
          "r"(dst),
      "l"(&map), "r"(col), "r"(row), "r"(bar)
      : "memory");
}

// tma_load_2d into every block of the cluster whose bit is set in `cta_mask` (bit i: %cluster_ctarank
// i), read from global memory once (PTX ISA "cp.async.bulk.tensor", .multicast::cluster; sm_90a). The
// box lands at the same offset `dst` in each block's shared memory and completes its bytes on the
// mbarrier at the same offset `bar` in each: every receiving block arms its own barrier for them.
__device__ __forceinline__ void tma_load_2d_multicast(std::uint32_t dst, const CUtensorMap& map, int col, int row,
                                                      std::uint32_t bar, std::uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
      "l"(&map), "r"(col), "r"(row), "r"(bar), "h"(cta_mask)
      : "memory");
}

// A box of a 3-D tensor map at element coordinates (col, row, depth) into shared memory at `dst`.
__device__ __forceinline__ void tma_load_3d(std::uint32_t dst, const CUtensorMap& map, int col, int row, int depth,
                                            std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];" ::"r"(dst),
      "l"(&map), "r"(col), "r"(row), "r"(depth), "r"(bar)
      : "memory");
}

// A box of a 4-D tensor map at element coordinates (col, row, inner, outer) into shared memory at
// `dst`.
__device__ __forceinline__ void tma_load_4d(std::uint32_t dst, const CUtensorMap& map, int col, int row, int inner,
                                            int outer, std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];" ::"r"(dst),
      "l"(&map), "r"(col), "r"(row), "r"(inner), "r"(outer), "r"(bar)
      : "memory");
}

// A box of a 3-D tensor map at element coordinates (col, row, depth) from shared memory at
// `src`, in this thread's current bulk group; elements outside the tensor are not written.
// Shared memory written by threads must be fenced first (fence_proxy_async): the copy engine
// reads through the async proxy.
__device__ __forceinline__ void tma_store_3d(const CUtensorMap& map, int col, int row, int depth, std::uint32_t src) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(&map),
               "r"(col), "r"(row), "r"(depth), "r"(src)
               : "memory");
}

// A box of a 4-D tensor map at element coordinates (col, row, inner, outer) from shared memory
// at `src`, as tma_store_3d.
__device__ __forceinline__ void tma_store_4d(const CUtensorMap& map, int col, int row, int inner, int outer,
                                             std::uint32_t src) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];" ::"l"(&map),
               "r"(col), "r"(row), "r"(inner), "r"(outer), "r"(src)
               : "memory");
}

// Orders this thread's shared-memory writes before later async-proxy reads of them (PTX ISA
// 9.7.12.15 "fence.proxy").
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// `bytes` contiguous bytes from global memory into shared memory at `dst`.
__device__ __forceinline__ void bulk_load(std::uint32_t dst, const void* src, std::uint32_t bytes, std::uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// `bytes` contiguous bytes from shared memory at `src` to global memory, in this thread's
// current bulk group (closed by bulk_commit).
__device__ __forceinline__ void bulk_store(void* dst, std::uint32_t src, std::uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(src), "r"(bytes)
               : "memory");
}

// Adds `bytes` of f32 from shared memory at `src` into global memory at `dst`, element by element,
// atomically per element, in this thread's current bulk group (PTX ISA 9.7.9.25.4.2
// "cp.reduce.async.bulk"). 16-byte aligned addresses, a multiple of 16 bytes.
__device__ __forceinline__ void bulk_reduce_add_f32(float* dst, std::uint32_t src, std::uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" ::"l"(dst), "r"(src),
               "r"(bytes)
               : "memory");
}

// The same for bf16, and its min and max. The PTX ISA ("cp.reduce.async.bulk") requires .noftz on a
// bf16 add (subnormals kept) and has no .min/.max for .f32: integer types, .f16 and .bf16 only.
__device__ __forceinline__ void bulk_reduce_add_bf16(void* dst, std::uint32_t src, std::uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.bf16 [%0], [%1], %2;" ::"l"(dst),
               "r"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_reduce_min_bf16(void* dst, std::uint32_t src, std::uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.min.bf16 [%0], [%1], %2;" ::"l"(dst), "r"(src),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_reduce_max_bf16(void* dst, std::uint32_t src, std::uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.max.bf16 [%0], [%1], %2;" ::"l"(dst), "r"(src),
               "r"(bytes)
               : "memory");
}

// What the bulk reductions replace: one thread's reduction of 4 bytes into global memory, atomic per
// element, no result returned (PTX ISA "red", Parallel Synchronization and Communication). `pair`
// holds two bf16, the one at the lower address in its low half. min and max on bf16 exist only in
// the vector form (.v2.bf16, PTX ISA 8.1, sm_90), which for add assembles to the same instruction
// as .bf16x2 (ptxas 13.0, byte for byte); there is no .min/.max for .f32.
__device__ __forceinline__ void red_add_f32(float* dst, float v) {
  asm volatile("red.global.add.f32 [%0], %1;" ::"l"(dst), "f"(v) : "memory");
}
__device__ __forceinline__ void red_add_bf16x2(void* dst, std::uint32_t pair) {
  asm volatile("red.global.add.noftz.bf16x2 [%0], %1;" ::"l"(dst), "r"(pair) : "memory");
}
__device__ __forceinline__ void red_min_bf16x2(void* dst, std::uint32_t pair) {
  asm volatile("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %1; red.global.min.noftz.v2.bf16 [%0], {lo, hi}; }" ::"l"(dst),
               "r"(pair)
               : "memory");
}
__device__ __forceinline__ void red_max_bf16x2(void* dst, std::uint32_t pair) {
  asm volatile("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %1; red.global.max.noftz.v2.bf16 [%0], {lo, hi}; }" ::"l"(dst),
               "r"(pair)
               : "memory");
}

__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

// Waits until at most `Pending` of this thread's bulk groups have not finished reading their
// shared-memory source (the source may then be overwritten).
template <int Pending>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(Pending) : "memory");
}

// Waits until at most `Pending` of this thread's bulk groups are incomplete (writes performed).
template <int Pending>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(Pending) : "memory");
}

}  // namespace tk::arch
