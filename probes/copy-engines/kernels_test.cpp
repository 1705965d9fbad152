// copy-engines' sizes as the kernels use them: the 2-D view of the buffer that whole boxes tile,
// the shared memory a CTA needs, and how many threads copy a box.
#include <gtest/gtest.h>

#include "probes/copy-engines/copy_engines_kernels.hpp"

namespace ce = tkprobe::copy_engines;
using ce::Engine;

TEST(CopyEngines, PowerOfTwoBoxesTileTheWholeBuffer) {
  constexpr std::size_t kGib = std::size_t(1) << 30;
  const ce::Tensor t = ce::tensor_in(kGib, {128, 64});
  EXPECT_EQ(t.row_bytes, 64u * 128);  // 64 boxes of 128-byte rows side by side
  EXPECT_EQ(t.extent.cols, 64u * 64);
  EXPECT_EQ(t.extent.rows, kGib / t.row_bytes);
  EXPECT_EQ(t.bytes, kGib);
  EXPECT_EQ(std::size_t(t.tiles) * ce::stage_bytes({128, 64}), kGib);
}

TEST(CopyEngines, OtherBoxesCoverAPrefixOfWholeBoxRows) {
  constexpr std::size_t kGib = std::size_t(1) << 30;
  const ce::Tensor t = ce::tensor_in(kGib, {64, 48});  // 96-byte box rows
  EXPECT_EQ(t.row_bytes, 96u * 64);
  EXPECT_EQ(t.extent.rows % 64, 0u);
  EXPECT_LE(t.bytes, kGib);
  EXPECT_GT(t.bytes + t.row_bytes * 64, kGib) << "no further row of boxes would fit";
  EXPECT_EQ(std::size_t(t.tiles) * ce::stage_bytes({64, 48}), t.bytes);
}

TEST(CopyEngines, SharedMemoryAndCopyingThreads) {
  EXPECT_EQ(ce::stage_bytes({64, 64}), 8192);
  EXPECT_EQ(ce::smem_bytes(Engine::tma, {64, 64}), 1024u + 4 * 8192 + 2 * 4 * 8);
  EXPECT_EQ(ce::smem_bytes(Engine::warp, {64, 64}), 1024u + 4 * 8192);
  EXPECT_EQ(ce::copying_threads(Engine::tma, {256, 64}), 1);
  EXPECT_EQ(ce::copying_threads(Engine::warp, {256, 64}), 128);     // 16 rows of 8 chunks at a time
  EXPECT_EQ(ce::copying_threads(Engine::cp_async, {64, 24}), 126);  // 42 rows of 3 chunks; 2 threads idle
  EXPECT_EQ(ce::threads_per_cta(Engine::tma), 160);
}
