#pragma once
// Which thread holds which matrix element in the register fragments of mma.sync and wgmma,
// as plain constexpr math (PTX ISA 9.7.13.4 "Matrix fragments for mma.m16n8k*" and 9.7.15.5
// "Register fragments" for wgmma). Host tests check the maps cover each tile exactly once;
// the tensor-core probes prove them on the GPU by checking products against a host reference.
//
// Every shape used here moves 32 bytes of K per row: m16n8k16 for 16-bit inputs, k8 for tf32,
// k32 for 8-bit. A 32-bit register then packs 4/elem_bytes consecutive k elements.
namespace tk::layout {

struct Coord {
  int row, col;
  constexpr bool operator==(const Coord&) const = default;
};

inline constexpr int kRowBytesPerK = 32;  // K x element size of every mma shape here

constexpr int group_of(int lane) { return lane / 4; }   // "groupID": the row (A, D) or column (B)
constexpr int thread_in_group(int lane) { return lane % 4; }

// A (16 x K, row-major): element `elem` of register `reg` (0..3) of `lane`. Registers 0/1 hold
// rows g / g+8 of the first K/2 columns, registers 2/3 the same rows of the second half.
// wgmma's A from registers is this layout per warp, warp w owning rows 16w..16w+15.
constexpr Coord a_fragment(int lane, int reg, int elem, int elem_bytes) {
  const int k = kRowBytesPerK / elem_bytes, per_reg = 4 / elem_bytes;
  return {group_of(lane) + 8 * (reg % 2), (reg / 2) * (k / 2) + thread_in_group(lane) * per_reg + elem};
}

// B (K x 8, column-major): element `elem` of register `reg` (0..1) is (k, n) with n = the group.
constexpr Coord b_fragment(int lane, int reg, int elem, int elem_bytes) {
  const int k = kRowBytesPerK / elem_bytes, per_reg = 4 / elem_bytes;
  return {reg * (k / 2) + thread_in_group(lane) * per_reg + elem, group_of(lane)};
}

// Accumulator value `v` of thread `thread` of a warpgroup for wgmma m64nN (thread 0..127), or
// of a warp for mma.sync m16n8 (lane 0..31, v 0..3). Values go in 8-column chunks of four:
// (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1). A register holds one f32/s32 value, or two f16
// values (v = 2*reg and 2*reg+1, the first in the low half).
constexpr Coord accumulator(int thread, int v) {
  const int warp = thread / 32, lane = thread % 32, chunk = v / 4, i = v % 4;
  return {16 * warp + group_of(lane) + 8 * (i / 2), 8 * chunk + 2 * thread_in_group(lane) + i % 2};
}

}  // namespace tk::layout

namespace tk::layout {

// An fp32 accumulator as the e4m3 A operand of the next wgmma (FlashAttention's P = softmax(S)
// into O += P V), without moving a value between threads.
//
// For 8-bit inputs wgmma's K is 32 and a thread's A registers hold, in rows g and g + 8, the K
// columns 4t..4t+3 and 16+4t..16+4t+3 of each 32-wide slice (a_fragment with elem_bytes 1:
// register r, byte e at (g + 8 (r % 2), 16 (r / 2) + 4t + e)). The accumulator gives the same
// thread columns 8c + 2t and 8c + 2t + 1 of each 8-column chunk c (accumulator()). Both are 8
// values per row per 32 columns, so each thread can fill its A registers from its own
// accumulators if the product's K index (the key, for P V) is permuted within each 32-column
// slice: A column k holds accumulator column p8_key(k), and V^T must be stored with the same
// permutation of its key columns. Since P V sums over keys, the product is unchanged.
//
// p8_key(k), k in 0..31: t = (k % 16) / 4, e = k % 4 -> 16 (k / 16) + 8 (e / 2) + 2t + e % 2.
constexpr int p8_key(int k) {
  const int half = k / 16, t = (k % 16) / 4, e = k % 4;
  return 16 * half + 8 * (e / 2) + 2 * t + e % 2;
}

// Its inverse: which A column holds accumulator column `key` (0..31).
constexpr int p8_column(int key) {
  const int half = key / 16, in8 = key % 8, hi = (key % 16) / 8;
  return 16 * half + 4 * (in8 / 2) + 2 * hi + in8 % 2;
}

// The accumulator value (of the 16 a thread holds per row pair per 32 columns, numbered as
// accumulator() numbers them from the slice's first chunk) that goes to byte `byte` of A register
// `reg`: chunk 2 (reg / 2) + byte / 2, row half reg % 2, column parity byte % 2. The same for
// every thread: the conversion is register renaming plus cvt.e4m3x2 and byte packing.
constexpr int p8_source(int reg, int byte) { return 4 * (2 * (reg / 2) + byte / 2) + 2 * (reg % 2) + byte % 2; }

}  // namespace tk::layout
