// The attention interface's host side (kernels/attention/attention.hpp): the FLOP count every
// TFLOP/s figure divides by, and the shape rules the CLI turns into usage errors.
#include <gtest/gtest.h>

#include "kernels/attention/attention.hpp"
#include "probes/common/attention_reference.hpp"

using attention::Kernel;
using attention::Shape;

namespace {

bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

TEST(AttentionShape, FlopsAreTwoProductsOfTwoNSquaredDPerHead) {
  // Q K^T and P V: 2 N^2 D each, per (batch, query head).
  EXPECT_DOUBLE_EQ(attention::flops({1, 1, 1, 1024, 64, false}), 4.0 * 1024 * 1024 * 64);
  EXPECT_DOUBLE_EQ(attention::flops({16, 16, 16, 1024, 128, false}), 4.0 * 16 * 16 * 1024 * 1024 * 128);
  EXPECT_DOUBLE_EQ(attention::flops({2, 8, 8, 4096, 64, true}), 2.0 * 2 * 8 * 4096.0 * 4096 * 64);
  // Grouped-query heads share K and V, not work: the count follows the query heads.
  EXPECT_DOUBLE_EQ(attention::flops({1, 8, 1, 512, 128, false}), attention::flops({1, 8, 8, 512, 128, false}));
  // No int overflow at the sweep's largest shape (2^41 FLOPs).
  EXPECT_DOUBLE_EQ(attention::flops({1, 16, 16, 16384, 128, false}), 4.0 * 16 * 16384.0 * 16384 * 128);
}

TEST(AttentionShape, CommonRulesNameWhatIsValid) {
  for (Kernel k : {Kernel::wgmma, Kernel::mma_sync}) {
    EXPECT_TRUE(mentions(attention::refusal({0, 4, 4, 128, 64, false}, k), "batch = 0: give a positive number"));
    EXPECT_TRUE(mentions(attention::refusal({1, -1, 1, 128, 64, false}, k), "heads = -1: give a positive number"));
    EXPECT_TRUE(mentions(attention::refusal({1, 4, 0, 128, 64, false}, k), "kv heads = 0: give a positive number"));
    EXPECT_TRUE(mentions(attention::refusal({1, 4, 4, 0, 64, false}, k), "seq = 0: give a positive number"));
    EXPECT_TRUE(mentions(attention::refusal({1, 4, 3, 128, 64, false}, k),
                         "the query heads must be a multiple of the key/value heads"));
    EXPECT_TRUE(mentions(attention::refusal({1, 4, 4, 128, 96, false}, k), "head dim = 96: give 64 or 128"));
  }
}

// Batch and heads are grid dimensions of the mma_sync kernel only: the wgmma kernel's persistent
// grid walks them as work items.
TEST(AttentionShape, OnlyTheMmaSyncGridLimitsBatchAndHeads) {
  for (const Shape s : {Shape{1, 65536, 1, 128, 64, false}, Shape{65536, 1, 1, 128, 64, false}}) {
    EXPECT_TRUE(mentions(attention::refusal(s, Kernel::mma_sync), "at most 65535"));
    EXPECT_EQ(attention::refusal(s, Kernel::wgmma), "");
  }
}

// Every shape the probe's sweep and --quick run, and the GPU tests' lengths, must be accepted by
// both kernels: a refusal here would turn the probe's rows into `skipped`.
TEST(AttentionShape, BothKernelsAcceptTheProbesAndTestsShapes) {
  std::vector<Shape> shapes = tkprobe::attention_check::sweep();
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (int n : {1, 100, 1000, 4097}) shapes.push_back({1, 4, 1, n, d, causal});
  for (const Shape& s : shapes)
    for (Kernel k : {Kernel::wgmma, Kernel::mma_sync}) {
      EXPECT_EQ(attention::refusal(s, k), "") << "kernel " << int(k) << " N=" << s.seq << " D=" << s.head_dim
                                              << (s.causal ? " causal" : "");
    }
}
