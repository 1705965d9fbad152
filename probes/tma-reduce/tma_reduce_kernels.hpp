#pragma once
// The tma-reduce probe's kernels (tma_reduce_kernels.cu, sm_90a): every block reduces one 16 KiB tile
// into global memory `passes` times with add, min or max, in f32 or bf16, either as one asynchronous
// bulk reduction per tile issued by one thread (cp.reduce.async.bulk) or by every thread with
// per-element reductions of 4 bytes each (red.global). What a block contributes is `contribution`,
// computed alike by the kernels and by the probe's exact check.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace tkprobe::tma_reduce {

enum class Method { bulk, atomic };
enum class Op { add, min, max };
enum class Dtype { f32, bf16 };

inline constexpr int kThreads = 128;
inline constexpr int kTileBytes = 16 * 1024;
// The tile in 4-byte words, one f32 or two bf16: each is one red.global of one thread, so a warp's
// instruction covers 128 bytes in either type.
inline constexpr int kTileWords = kTileBytes / 4;

constexpr int element_bytes(Dtype t) { return t == Dtype::f32 ? 4 : 2; }
constexpr int tile_elements(Dtype t) { return kTileBytes / element_bytes(t); }

struct Launch {
  int blocks;
  int targets;     // distinct tiles of `dst` the blocks reduce into: block b into tile b % targets
  int passes;      // reductions of the tile per block
  int add_stride;  // add only: block b's tile holds 1 where element % add_stride == b % add_stride, else 0
};

// What block `block` reduces into element `element` of its target tile, every pass: small integers,
// exact in f32 and in bf16 (8 significant bits hold every integer up to 256).
// - add: 1, or 0 off the block's stride, which the probe widens until every element's sum stays
//   below 256 in bf16 whatever the order (with a stride of 1, as in f32, the tile is all ones).
// - min, max: +-1..256 from a hash of (block, element), so the extreme over the blocks reducing into
//   one tile comes from a different block at each element and a lost reduction changes the result;
//   both signs, so a comparison of raw bit patterns would fail.
constexpr float contribution(Op op, int add_stride, int block, int element) {
  if (op == Op::add) return element % add_stride == block % add_stride ? 1.0f : 0.0f;
  std::uint32_t h = std::uint32_t(block) * 0x9E3779B1u + std::uint32_t(element) * 0x85EBCA77u;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  const float magnitude = float(1 + h % 256);
  return (h >> 8) & 1 ? -magnitude : magnitude;
}

// Whether (op, dtype) has an instruction for both methods on sm_90: add in f32 and bf16, min and max
// in bf16 only (PTX ISA "cp.reduce.async.bulk" and "red": no .min/.max for .f32).
constexpr bool has_instructions(Op op, Dtype t) { return op == Op::add || t == Dtype::bf16; }

// Reduces into dst ([targets][kTileBytes] bytes, holding the op's identity: 0, +inf or -inf).
// Throws UsageError for a pair without instructions.
void launch_reduce(Method m, Op op, Dtype t, const Launch& l, void* dst, cudaStream_t stream);

}  // namespace tkprobe::tma_reduce
