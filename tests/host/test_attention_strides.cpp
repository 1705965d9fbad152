// The attention interface's strides (attention::Strides): the contiguous default, the layout a
// transposed projection hands over, and each refusal naming the tensor and what the TMA needs.
// refusal() and the constructors' checks read only the pointers' values, so fake, aligned
// addresses stand in for device memory here.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/attention/attention.hpp"

using attention::BackwardLayout;
using attention::BackwardTensors;
using attention::ForwardLayout;
using attention::Kernel;
using attention::Shape;
using attention::Strides;
using attention::Tensors;
using bf16 = __nv_bfloat16;

namespace {

bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// A distinct 256-byte aligned fake address per tensor, plus `offset` bytes.
bf16* fake(int tensor, std::uintptr_t offset = 0) {
  return reinterpret_cast<bf16*>(std::uintptr_t(1) << 20 | std::uintptr_t(tensor) << 12 | offset);
}

Tensors forward_tensors() { return {fake(0), fake(1), fake(2), fake(3), reinterpret_cast<float*>(fake(4))}; }

BackwardTensors backward_tensors() {
  return {fake(0), fake(1), fake(2), fake(3), fake(4), reinterpret_cast<const float*>(fake(5)), fake(6), fake(7),
          fake(8)};
}

// (B, N, H, D) contiguous, seen as (B, H, N, D): what x.view(B, N, H, D).transpose(1, 2) gives.
Strides transposed(int heads, const Shape& s) {
  const std::int64_t d = s.head_dim;
  return {std::int64_t(s.seq) * heads * d, d, heads * d, 1};
}

constexpr Shape kShape{2, 8, 2, 1000, 128, true};

}  // namespace

TEST(AttentionStrides, ContiguousIsBHND) {
  const Strides s = attention::contiguous(8, 1000, 128);
  EXPECT_EQ(s, (Strides{8 * 1000 * 128, 1000 * 128, 128, 1}));
}

// Callers that give no layout, or the contiguous strides spelled out, get the same thing.
TEST(AttentionStrides, DefaultsAreContiguous) {
  const Strides q = attention::contiguous(kShape.heads, kShape.seq, kShape.head_dim);
  const Strides kv = attention::contiguous(kShape.kv_heads, kShape.seq, kShape.head_dim);
  for (Kernel k : {Kernel::wgmma, Kernel::mma_sync}) {
    EXPECT_EQ(attention::refusal(forward_tensors(), kShape, k, {}), "");
    EXPECT_EQ(attention::refusal(forward_tensors(), kShape, k, ForwardLayout{q, kv, kv, q}), "");
  }
  EXPECT_EQ(attention::refusal(backward_tensors(), kShape, {}), "");
  EXPECT_EQ(attention::refusal(backward_tensors(), kShape, BackwardLayout{q, kv, kv, q, q, q, kv, kv}), "");
}

TEST(AttentionStrides, TheWgmmaKernelsReadTheTransposedLayoutInPlace) {
  const Strides q = transposed(kShape.heads, kShape), kv = transposed(kShape.kv_heads, kShape);
  EXPECT_EQ(attention::refusal(forward_tensors(), kShape, Kernel::wgmma, ForwardLayout{q, kv, kv, q}), "");
  EXPECT_EQ(attention::refusal(backward_tensors(), kShape, BackwardLayout{q, kv, kv, q, q, q, kv, kv}), "");
  // Tensors may come each in its own layout.
  EXPECT_EQ(attention::refusal(backward_tensors(), kShape, BackwardLayout{q, {}, kv, {}, q, {}, kv, {}}), "");
}

TEST(AttentionStrides, TheMmaSyncKernelRefusesStrides) {
  const ForwardLayout layout{.k = transposed(kShape.kv_heads, kShape)};
  const std::string why = attention::refusal(forward_tensors(), kShape, Kernel::mma_sync, layout);
  EXPECT_TRUE(mentions(why, "k: strides {batch 256000, head 128, seq 256, dim 1}")) << why;
  EXPECT_TRUE(mentions(why, "strided inputs need the wgmma kernel")) << why;
}

TEST(AttentionStrides, TheHeadDimMustBeContiguous) {
  Strides q = attention::contiguous(kShape.heads, kShape.seq, kShape.head_dim);
  q.dim = 2;
  const std::string why = attention::refusal(forward_tensors(), kShape, Kernel::wgmma, ForwardLayout{.q = q});
  EXPECT_TRUE(mentions(why, "q: head-dim stride 2: the head dim must be contiguous (stride 1)")) << why;
}

TEST(AttentionStrides, StridesMustBeMultiplesOfSixteenBytes) {
  Strides v = attention::contiguous(kShape.kv_heads, kShape.seq, kShape.head_dim);
  v.seq = 132;  // 264 bytes: rows padded by 4 elements
  std::string why = attention::refusal(forward_tensors(), kShape, Kernel::wgmma, ForwardLayout{.v = v});
  EXPECT_TRUE(mentions(why, "v: seq stride 132 (264 bytes): the TMA needs strides that are multiples of 16 bytes"))
      << why;
  v.seq = 136;  // 272 bytes: padded by 8, which the TMA takes
  EXPECT_EQ(attention::refusal(forward_tensors(), kShape, Kernel::wgmma, ForwardLayout{.v = v}), "");
  Strides dk = attention::contiguous(kShape.kv_heads, kShape.seq, kShape.head_dim);
  dk.batch += 4;
  why = attention::refusal(backward_tensors(), kShape, BackwardLayout{.dk = dk});
  EXPECT_TRUE(mentions(why, "dk: batch stride 256004")) << why;
}

TEST(AttentionStrides, StridesMustBePositiveAndBelowTwoToTheForty) {
  Strides q = attention::contiguous(kShape.heads, kShape.seq, kShape.head_dim);
  q.head = 0;
  EXPECT_TRUE(mentions(attention::refusal(forward_tensors(), kShape, Kernel::wgmma, ForwardLayout{.q = q}),
                       "q: head stride 0: give a positive stride"));
  q.head = std::int64_t(1) << 40;
  EXPECT_TRUE(mentions(attention::refusal(forward_tensors(), kShape, Kernel::wgmma, ForwardLayout{.q = q}),
                       "the TMA needs strides below 2^40 bytes"));
}

TEST(AttentionStrides, BasesMustBeSixteenByteAligned) {
  Tensors t = forward_tensors();
  t.k = fake(1, 8);
  const std::string why = attention::refusal(t, kShape, Kernel::wgmma, {});
  EXPECT_TRUE(mentions(why, "k: its address is not 16-byte aligned: the TMA needs a 16-byte aligned base")) << why;
  BackwardTensors b = backward_tensors();
  b.d_o = fake(4, 2);
  EXPECT_TRUE(mentions(attention::refusal(b, kShape, {}), "d_o: its address is not 16-byte aligned"));
}

// An output whose rows share addresses would be written by two blocks at once; inputs may share.
TEST(AttentionStrides, OutputsMustNotOverlap) {
  const Strides rows_overlap{kShape.heads * kShape.seq * 128, std::int64_t(kShape.seq) * 128, 64, 1};
  EXPECT_TRUE(mentions(attention::refusal(forward_tensors(), kShape, Kernel::wgmma, ForwardLayout{.o = rows_overlap}),
                       "o: strides {batch 1024000, head 128000, seq 64, dim 1} make elements overlap"));
  EXPECT_EQ(attention::refusal(forward_tensors(), kShape, Kernel::wgmma, ForwardLayout{.q = rows_overlap}), "");
  const Strides heads_overlap{std::int64_t(kShape.seq) * 128, 128, std::int64_t(kShape.kv_heads) * 128 / 2, 1};
  EXPECT_TRUE(mentions(attention::refusal(backward_tensors(), kShape, BackwardLayout{.dv = heads_overlap}),
                       "dv: strides"));
}

// PyTorch gives an axis of extent 1 whatever stride its view arithmetic leaves: never used.
TEST(AttentionStrides, AnAxisOfExtentOneTakesAnyStride) {
  const Shape one{1, 1, 1, 1, 64, false};
  const Strides odd{3, 5, 7, 1};
  EXPECT_EQ(attention::refusal(forward_tensors(), one, Kernel::wgmma, ForwardLayout{odd, odd, odd, odd}), "");
  EXPECT_EQ(attention::refusal(forward_tensors(), one, Kernel::mma_sync, ForwardLayout{odd, odd, odd, odd}), "");
}

// The passes refuse before touching the GPU, with the same reason.
TEST(AttentionStrides, ConstructorsThrowTheRefusal) {
  Strides q = attention::contiguous(kShape.heads, kShape.seq, kShape.head_dim);
  q.dim = 3;
  try {
    attention::Forward(forward_tensors(), kShape, Kernel::wgmma, ForwardLayout{.q = q});
    FAIL() << "the forward took a non-contiguous head dim";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(mentions(e.what(), "attention forward: q: head-dim stride 3")) << e.what();
  }
  try {
    attention::Backward(backward_tensors(), kShape, BackwardLayout{.dq = q});
    FAIL() << "the backward took a non-contiguous head dim";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(mentions(e.what(), "attention backward: dq: head-dim stride 3")) << e.what();
  }
}

// A lent scratch holds both per-row vectors (lse2 and D) of every padded query row (the
// deterministic path's whole scratch; the reducing one adds its accumulator: test_attention_backward),
// and is read with bulk copies: it must be aligned.
TEST(AttentionStrides, LentScratchIsSizedAndChecked) {
  const std::size_t padded_rows = std::size_t(kShape.batch) * kShape.heads * 1024;  // N = 1000 padded to tiles
  const attention::BackwardOptions deterministic{.dq = attention::DqPath::deterministic};
  EXPECT_GE(attention::backward_scratch_bytes(kShape, deterministic), 2 * padded_rows * sizeof(float));
  EXPECT_LT(attention::backward_scratch_bytes(kShape, deterministic), 2 * padded_rows * sizeof(float) + 4096);
  try {
    attention::Backward(backward_tensors(), kShape, {}, reinterpret_cast<float*>(fake(9, 4)));
    FAIL() << "the backward took a misaligned scratch";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(mentions(e.what(), "the scratch is null or not 16-byte aligned")) << e.what();
  }
}
