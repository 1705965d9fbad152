// The Based interface's host side (kernels/based/based.hpp): the FLOP count every TFLOP/s figure
// divides by, and the shape rules the CLI turns into usage errors.
#include <gtest/gtest.h>

#include "kernels/based/based.hpp"

using based::Shape;

namespace {

bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

TEST(BasedShape, FlopsAreTheChunkedProductsOverTheUnfoldedFeatures) {
  // Per row: S (2 x 64 x 16), phi(S) V (2 x 64 x Dv'), readout and update (2 x 273 x Dv' each),
  // Dv' = Dv + 1 when normalized.
  const double normalized = 2.0 * 64 * 16 + 2.0 * 64 * 65 + 4.0 * 273 * 65;
  EXPECT_DOUBLE_EQ(based::flops({1, 1, 1, 16, 64, true}), normalized);
  EXPECT_DOUBLE_EQ(based::flops({1, 1, 1, 16, 64, false}), 2.0 * 64 * 16 + 2.0 * 64 * 64 + 4.0 * 273 * 64);
  // Linear in batch, heads and seq; no int overflow at the sweep's largest shape.
  EXPECT_DOUBLE_EQ(based::flops({16, 16, 16384, 16, 64, true}), 16.0 * 16 * 16384 * normalized);
  EXPECT_DOUBLE_EQ(based::flops({3, 5, 4097, 16, 64, true}), 3.0 * 5 * 4097 * normalized);
  // ThunderKittens' 1.14 ms at B = H = 16, N = 16384 is ~300 TFLOP/s by this count (based.hpp).
  EXPECT_NEAR(based::flops({16, 16, 16384, 16, 64, true}) / 1.14e-3 / 1e12, 299, 1);
}

TEST(BasedShape, RefusalsNameWhatIsValid) {
  EXPECT_TRUE(mentions(based::refusal({0, 4, 128, 16, 64, true}), "batch = 0: give a positive number"));
  EXPECT_TRUE(mentions(based::refusal({1, -1, 128, 16, 64, true}), "heads = -1: give a positive number"));
  EXPECT_TRUE(mentions(based::refusal({1, 4, 0, 16, 64, true}), "seq = 0: give a positive number"));
  EXPECT_TRUE(mentions(based::refusal({1, 4, 128, 32, 64, true}), "feature dim = 32: give 16"));
  EXPECT_TRUE(mentions(based::refusal({1, 4, 128, 16, 96, false}), "value dim = 96: give 64 or 128"));
  EXPECT_TRUE(mentions(based::refusal({65536, 65536, 128, 16, 64, true}), "batch x heads is too large"));
}

TEST(BasedShape, TheProbesAndTestsShapesAreAccepted) {
  for (int n : {1, 7, 100, 1000, 1024, 4096, 4097, 5000, 8192, 16384}) {
    EXPECT_EQ(based::refusal({16, 16, n, 16, 64, true}), "") << n;
    EXPECT_EQ(based::refusal({3, 5, n, 16, 64, false}), "") << n;
    EXPECT_EQ(based::refusal({3, 5, n, 16, 128, true}), "") << n;
  }
}

TEST(BasedShape, ForwardRefusesWhatRefusalNames) {
  EXPECT_THROW(based::Forward({nullptr, nullptr, nullptr, nullptr}, {1, 1, 64, 16, 96, true}), std::invalid_argument);
}
