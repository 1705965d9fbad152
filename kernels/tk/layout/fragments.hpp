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
