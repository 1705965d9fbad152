// The tile DSL's group-scope shared-tile load (kernels/tk/ops/group/memory.cuh) on the GPU
// against a host reference on fresh random data (tests/gpu/dsl_group_kernels.hpp): three bf16
// tile sizes and a float tile, rows a wider pitch apart than the tile, every row present, some
// and none. Rows present must arrive exactly; rows past valid_rows must read exactly zero
// (the shared tile starts poisoned, NaN, so a row left unwritten fails). The gather into two tiles
// likewise, its rows from shuffled offsets into two sources, some rows zeros by a negative offset.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/gpu/dsl_group_kernels.hpp"

namespace dsl = tkprobe::test_kernels::dsl;

namespace {

std::string name(const dsl::GroupLoadCase& c, int valid_rows) {
  std::ostringstream s;
  s << (c.type == dsl::DType::bf16 ? "bf16" : "f32") << " st " << c.rows << "x" << c.cols << " by " << c.warps
    << " warps, " << valid_rows << " valid rows";
  return s.str();
}

}  // namespace

TEST(DslGroup, LoadWritesTheTileAndZerosMissingRows) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 gen(seed);
  for (const dsl::GroupLoadCase& c : dsl::kGroupLoadCases) {
    const int ld = c.cols + 16;  // a row pitch wider than the tile, still 16-byte aligned
    const int partial = std::uniform_int_distribution<int>(1, c.rows - 1)(gen);
    for (const int valid_rows : {c.rows, partial, 0}) {
      std::vector<float> global(std::size_t(valid_rows) * ld);
      for (float& x : global) x = dsl::round_to(c.type, std::uniform_real_distribution<float>(-2.0f, 2.0f)(gen));
      const std::vector<float> tile = dsl::run_group_load(c, ld, valid_rows, global);
      ASSERT_EQ(tile.size(), std::size_t(c.rows) * c.cols);
      int bad = 0;
      std::ostringstream first;
      for (int r = 0; r < c.rows; ++r)
        for (int col = 0; col < c.cols; ++col) {
          const float want = r < valid_rows ? global[std::size_t(r) * ld + col] : 0.0f;
          const float got = tile[std::size_t(r) * c.cols + col];
          // Bit for bit: the poison (a NaN) never passes, and missing rows are +0.
          if (std::memcmp(&got, &want, sizeof(float)) != 0 && bad++ < 4) {
            first << "\n  (" << r << ", " << col << ") got " << got << ", want " << want;
          }
        }
      EXPECT_EQ(bad, 0) << name(c, valid_rows) << ": " << bad << " elements wrong:" << first.str();
    }
  }
}

TEST(DslGroup, GatherIntoTwoTilesReadsEachRowFromItsOffset) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 gen(seed);
  constexpr int kRows = dsl::kGatherRows, kCols = dsl::kGatherCols, kPitch = kCols + 16, kPoolRows = 3 * kRows;
  std::vector<float> a(std::size_t(kPoolRows) * kPitch), b(a.size());
  for (std::vector<float>* x : {&a, &b})
    for (float& v : *x) v = dsl::round_to(dsl::DType::bf16, std::uniform_real_distribution<float>(-2.0f, 2.0f)(gen));
  std::vector<int> pool_rows(kPoolRows);
  std::iota(pool_rows.begin(), pool_rows.end(), 0);
  std::shuffle(pool_rows.begin(), pool_rows.end(), gen);
  std::vector<long long> offsets(kRows);
  for (int r = 0; r < kRows; ++r) offsets[r] = r % 5 == 3 ? -1 : (long long)pool_rows[r] * kPitch;
  const int partial = std::uniform_int_distribution<int>(1, kRows - 1)(gen);
  for (const int valid_rows : {kRows, partial, 0}) {
    const std::vector<float> tiles = dsl::run_group_gather(offsets, valid_rows, a, b);
    int bad = 0;
    std::ostringstream first;
    for (int t = 0; t < 2; ++t)
      for (int r = 0; r < kRows; ++r)
        for (int col = 0; col < kCols; ++col) {
          const std::vector<float>& source = t == 0 ? a : b;
          const float want = r < valid_rows && offsets[r] >= 0 ? source[std::size_t(offsets[r]) + col] : 0.0f;
          const float got = tiles[(std::size_t(t) * kRows + r) * kCols + col];
          if (std::memcmp(&got, &want, sizeof(float)) != 0 && bad++ < 4) {
            first << "\n  tile " << t << " (" << r << ", " << col << ") got " << got << ", want " << want;
          }
        }
    EXPECT_EQ(bad, 0) << valid_rows << " valid rows: " << bad << " elements wrong:" << first.str();
  }
}
