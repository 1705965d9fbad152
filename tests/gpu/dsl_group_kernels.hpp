#pragma once
// Kernels that run the tile DSL's group-scope operations (kernels/tk/group.cuh), for the GPU
// tests. Values travel as floats, holding values of the element type exactly (dsl::round_to).
#include <vector>

#include "tests/gpu/dsl_warp_kernels.hpp"

namespace tkprobe::test_kernels::dsl {

// A shared tile st<type, rows, cols> that tk::group<warps> loads, in a block of that many warps.
struct GroupLoadCase {
  DType type;
  int warps, rows, cols;
};

// bf16 tiles one 128-byte swizzle box wide and two, one too small to give every thread of its
// group a chunk (64-byte swizzle), and a float tile.
inline constexpr GroupLoadCase kGroupLoadCases[] = {
    {DType::bf16, 1, 16, 64}, {DType::bf16, 4, 64, 128}, {DType::bf16, 4, 16, 32}, {DType::f32, 2, 32, 32}};

// The tile, its shared memory poisoned (all bits set) first, loaded with group::load_async
// from `global`: valid_rows rows of `ld` elements, exactly what is allocated (one dummy element
// for none), so compute-sanitizer catches a read past them. Read back element by element
// (st::operator()) and returned rows x cols, row-major.
std::vector<float> run_group_load(const GroupLoadCase& c, int ld, int valid_rows, const std::vector<float>& global);

// The gather into several tiles at once (group::load_rows_async over N tiles): two bf16 tiles of
// kGatherRows x kGatherCols, poisoned first, loaded by a group of 4 warps from `a` and from `b`, row r of
// both from element offsets[r] (negative: a row of zeros), rows >= valid_rows zeros. Returned as
// tile a then tile b, each rows x cols, row-major.
inline constexpr int kGatherRows = 64, kGatherCols = 64;
std::vector<float> run_group_gather(const std::vector<long long>& offsets, int valid_rows, const std::vector<float>& a,
                                    const std::vector<float>& b);

}  // namespace tkprobe::test_kernels::dsl
