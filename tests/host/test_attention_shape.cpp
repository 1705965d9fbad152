// The attention interface's host side (kernels/attention/attention.hpp): the FLOP count every
// TFLOP/s figure divides by, and the shape rules the CLI turns into usage errors.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/reference.hpp"

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
    EXPECT_TRUE(mentions(attention::refusal({1, 4, 4, 128, 80, false}, k), "head dim = 80: give 64, 96, 128 or 256"));
  }
}

// Head dims 96 and 256 are the wgmma forward's alone (bf16, dense or packed): the mma.sync forward,
// the backward and the e4m3 forward say which head dims they take.
TEST(AttentionShape, HeadDims96And256AreTheWgmmaForwardsAlone) {
  for (int d : {96, 256}) {
    for (bool causal : {false, true})
      for (int n : {1, 100, 1000, 4097}) {
        EXPECT_EQ(attention::refusal({1, 4, 2, n, d, causal}, Kernel::wgmma), "") << d << " " << n;
        EXPECT_EQ(attention::refusal({1, 4, 2, n, d, causal, 2 * n + 3}, Kernel::wgmma), "") << n;  // Nk > Nq
      }
    const Shape s{1, 4, 4, 128, d, false};
    const std::string head_dim = "head dim = " + std::to_string(d);
    EXPECT_EQ(attention::refusal(s, Kernel::mma_sync), head_dim + ": the mma-sync forward takes 64 or 128");
    EXPECT_EQ(attention::backward_refusal(s), head_dim + ": the backward takes 64 or 128");
    EXPECT_EQ(attention::refusal(s, attention::Dtype::e4m3), head_dim + ": the e4m3 forward takes 128");
  }
  EXPECT_EQ(attention::backward_refusal({1, 4, 4, 128, 128, false}), "");
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

// The e4m3 forward (attention::Fp8Forward): the wgmma rules, then head dim 128 and the V^T pass's
// grid; the tensors' alignment and scales; its scratch. The bf16 rules are unchanged by Dtype.
TEST(AttentionShape, E4m3TakesTheWgmmaRulesAndHeadDim128) {
  using attention::Dtype;
  for (const Shape& s : {Shape{1, 4, 4, 1, 64, false}, Shape{2, 16, 16, 4096, 128, true}, Shape{1, 4, 3, 128, 128, false}})
    EXPECT_EQ(attention::refusal(s, Dtype::bf16), attention::refusal(s, Kernel::wgmma));
  EXPECT_EQ(attention::refusal({1, 4, 4, 128, 64, false}, Dtype::e4m3), "head dim = 64: the e4m3 forward takes 128");
  EXPECT_TRUE(mentions(attention::refusal({1, 4, 4, 128, 96, false}, Dtype::e4m3),
                       "head dim = 96: the e4m3 forward takes 128"));
  EXPECT_TRUE(mentions(attention::refusal({0, 4, 4, 128, 128, false}, Dtype::e4m3), "batch = 0"));
  EXPECT_TRUE(mentions(attention::refusal({1, 4, 3, 128, 128, false}, Dtype::e4m3), "multiple of the key/value heads"));
  EXPECT_TRUE(mentions(attention::refusal({65536, 1, 1, 16, 128, false}, Dtype::e4m3), "at most 65535"));
  for (int n : {1, 63, 1000, 1024, 4096, 16384})
    for (bool causal : {false, true}) {
      EXPECT_EQ(attention::refusal({2, 4, 4, n, 128, causal}, Dtype::e4m3), "") << n;
      EXPECT_EQ(attention::refusal({1, 8, 2, n, 128, causal}, Dtype::e4m3), "") << n;  // GQA
    }
  for (const Shape& s : tkprobe::attention_check::sweep())
    if (s.head_dim == 128) {
      EXPECT_EQ(attention::refusal(s, Dtype::e4m3), "");
    }
}

TEST(AttentionShape, E4m3TensorsNeedAlignmentAndPositiveFiniteScales) {
  const Shape s{1, 4, 4, 128, 128, false};
  alignas(16) static unsigned char bytes[64];
  const auto* q = reinterpret_cast<const __nv_fp8_e4m3*>(bytes);
  auto* o = reinterpret_cast<__nv_bfloat16*>(bytes + 16);
  float lse[1];
  const attention::Fp8Tensors good{q, q, q, 0.5f, 0.25f, 2.0f, o, lse};
  EXPECT_EQ(attention::refusal(good, s), "");
  attention::Fp8Tensors t = good;
  t.k = reinterpret_cast<const __nv_fp8_e4m3*>(bytes + 1);
  EXPECT_EQ(attention::refusal(t, s), "k: null or not 16-byte aligned: the TMA needs a 16-byte aligned base");
  t = good;
  t.o = nullptr;
  EXPECT_TRUE(mentions(attention::refusal(t, s), "o: null or not 16-byte aligned"));
  t = good;
  t.lse = nullptr;
  EXPECT_TRUE(mentions(attention::refusal(t, s), "lse: give a buffer"));
  for (float bad : {0.0f, -1.0f, INFINITY, NAN}) {
    t = good;
    t.v_scale = bad;
    EXPECT_TRUE(mentions(attention::refusal(t, s), "v_scale = ")) << bad;
    EXPECT_TRUE(mentions(attention::refusal(t, s), "give a positive finite scale")) << bad;
  }
  EXPECT_EQ(attention::refusal(good, {1, 4, 4, 128, 64, false}), "head dim = 64: the e4m3 forward takes 128");
}

TEST(AttentionShape, E4m3ScratchIsVTransposedPaddedToWholeKeyTiles) {
  // B Hkv D x (N rounded up to 128) bytes.
  EXPECT_EQ(attention::fp8_scratch_bytes({1, 4, 4, 1, 128, false}), 4u * 128 * 128);
  EXPECT_EQ(attention::fp8_scratch_bytes({2, 8, 2, 1000, 128, false}), 2u * 2 * 128 * 1024);
  EXPECT_EQ(attention::fp8_scratch_bytes({1, 16, 16, 16384, 128, true}), 16u * 128 * 16384);
}
