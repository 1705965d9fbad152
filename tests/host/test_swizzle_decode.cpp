// Recovering an XOR swizzle from placements, checked on the project's own model.
#include <gtest/gtest.h>

#include "kernels/tk/layout/swizzle.hpp"
#include "probes/tma-swizzle/swizzle_decode.hpp"

using namespace tkprobe::swizzle_decode;
using tk::layout::Swizzle;

namespace {
std::vector<Placement> model_placements(Swizzle mode, std::uint32_t bytes) {
  std::vector<Placement> p;
  for (std::uint32_t off = 0; off < bytes; off += 2) p.push_back({off, tk::layout::swizzle(off, mode)});
  return p;
}
}  // namespace

TEST(SwizzleDecode, RecoversEachModeFromTheModel) {
  EXPECT_EQ(recover_xor_rule(model_placements(Swizzle::b128, 8192)),
            (std::vector<XorTerm>{{4, 7}, {5, 8}, {6, 9}}));
  EXPECT_EQ(recover_xor_rule(model_placements(Swizzle::b64, 8192)), (std::vector<XorTerm>{{4, 7}, {5, 8}}));
  EXPECT_EQ(recover_xor_rule(model_placements(Swizzle::b32, 8192)), (std::vector<XorTerm>{{4, 7}}));
  EXPECT_EQ(recover_xor_rule(model_placements(Swizzle::none, 8192)), std::vector<XorTerm>{});
  EXPECT_EQ(describe({{4, 7}, {5, 8}, {6, 9}}), "bits 4-6 ^= bits 7-9 (16-byte chunk ^= 128-byte line mod 8)");
  EXPECT_EQ(describe({}), "identity (no bit moves)");
}

TEST(SwizzleDecode, ANonXorPermutationIsNotExplained) {
  // Swapping two 16-byte chunks of line 0 only: bit 4 changes, but no single bit predicts it.
  std::vector<Placement> p;
  for (std::uint32_t off = 0; off < 256; off += 16) p.push_back({off, off < 32 ? off ^ 16u : off});
  EXPECT_FALSE(recover_xor_rule(p).has_value());
}
