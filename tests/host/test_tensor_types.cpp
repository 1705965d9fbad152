// The tensor-core probes' shape and type rules (PTX ISA 9.7.13, 9.7.15), FLOP counts, the
// operand bit patterns the host builds, and the CLI's refusal of what the ISA forbids.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "probes/measure/tensor_types.hpp"
#include "src/errors.hpp"
#include "tests/fixtures.hpp"

using namespace tkprobe::tensor;
using fixtures::run;

namespace {
bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }
}  // namespace

TEST(TensorTypes, InstructionKMovesThirtyTwoBytesPerRow) {
  EXPECT_EQ(k_of(DType::bf16), 16);
  EXPECT_EQ(k_of(DType::fp16), 16);
  EXPECT_EQ(k_of(DType::tf32), 8);
  EXPECT_EQ(k_of(DType::e4m3), 32);
  EXPECT_EQ(k_of(DType::s8), 32);
}

TEST(TensorTypes, FlopsPerInstruction) {
  EXPECT_EQ(wgmma_flop(DType::bf16, 256), 2.0 * 64 * 256 * 16);  // 524288: 128 clocks at 4096 FLOP/clk/SM
  EXPECT_EQ(wgmma_flop(DType::e4m3, 256), 2.0 * 64 * 256 * 32);
  EXPECT_EQ(wgmma_flop(DType::tf32, 8), 2.0 * 64 * 8 * 8);
  EXPECT_EQ(mma_sync_flop(DType::bf16), 4096);
  EXPECT_EQ(mma_sync_flop(DType::tf32), 2048);
  EXPECT_EQ(mma_sync_flop(DType::s8), 8192);
}

TEST(TensorTypes, ValidN) {
  EXPECT_EQ(wgmma_ns(DType::bf16).size(), 32u);
  EXPECT_EQ(wgmma_ns(DType::s8), (std::vector<int>{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208,
                                                   224, 240, 256}));
  EXPECT_FALSE(valid_wgmma_n(DType::bf16, 7));
  EXPECT_FALSE(valid_wgmma_n(DType::bf16, 264));
  EXPECT_FALSE(valid_wgmma_n(DType::s8, 40));
  EXPECT_TRUE(valid_wgmma_n(DType::e4m3, 40));
}

TEST(TensorTypes, Accumulators) {
  EXPECT_TRUE(valid_acc(DType::bf16, Acc::f32));
  EXPECT_FALSE(valid_acc(DType::bf16, Acc::f16));
  EXPECT_FALSE(valid_acc(DType::tf32, Acc::f16));
  EXPECT_TRUE(valid_acc(DType::fp16, Acc::f16));
  EXPECT_TRUE(valid_acc(DType::e5m2, Acc::f16));
  EXPECT_TRUE(valid_acc(DType::s8, Acc::s32));
  EXPECT_FALSE(valid_acc(DType::s8, Acc::f32));
  EXPECT_THROW(validate_wgmma(DType::bf16, Acc::f16, 64, 256), tkprobe::UsageError);
  EXPECT_NO_THROW(validate_wgmma(DType::e4m3, Acc::f16, 64, 256));
}

TEST(TensorTypes, ParseShape) {
  EXPECT_EQ(parse_shape("64x256"), (std::pair{64, 256}));
  EXPECT_FALSE(parse_shape("64"));
  EXPECT_FALSE(parse_shape("64x"));
  EXPECT_FALSE(parse_shape("64x-8"));
  EXPECT_FALSE(parse_shape("64x8x16"));
}

// Every element's bits decode, by the format's own rule, to the value the reference uses.
TEST(TensorTypes, RandomElementsAreExactAndNonZero) {
  std::mt19937_64 rng(7);
  const auto minifloat = [](std::uint32_t bits, int e, int m, int bias) {
    const int exp = (bits >> m) & ((1 << e) - 1);
    const double v = std::ldexp(1.0 + std::ldexp(double(bits & ((1u << m) - 1)), -m), exp - bias);
    return (bits >> (e + m)) & 1 ? -v : v;
  };
  for (int i = 0; i < 1000; ++i) {
    const Element bf = random_element(DType::bf16, rng);
    EXPECT_EQ(std::bit_cast<float>(bf.bits << 16), bf.value);
    const Element h = random_element(DType::fp16, rng);
    EXPECT_EQ(accumulator_value(Acc::f16, h.bits), h.value);
    const Element t = random_element(DType::tf32, rng);
    EXPECT_EQ(std::bit_cast<float>(t.bits), t.value);
    EXPECT_EQ(t.bits & 0x1fffu, 0u);  // tf32 keeps 10 mantissa bits
    const Element e4 = random_element(DType::e4m3, rng);
    EXPECT_EQ(minifloat(e4.bits, 4, 3, 7), e4.value);
    const Element e5 = random_element(DType::e5m2, rng);
    EXPECT_EQ(minifloat(e5.bits, 5, 2, 15), e5.value);
    const Element s = random_element(DType::s8, rng);
    EXPECT_EQ(static_cast<std::int8_t>(s.bits), s.value);
    for (const Element& e : {bf, h, t, e4, e5, s}) EXPECT_NE(e.value, 0.0);
  }
}

TEST(TensorTypes, NegationFlipsTheValue) {
  std::mt19937_64 rng(3);
  for (const TypeInfo& t : kTypes) {
    const Element e = random_element(t.dtype, rng), n = negate(t.dtype, e);
    EXPECT_EQ(n.value, -e.value) << t.name;
    EXPECT_EQ(negate(t.dtype, n).bits, e.bits) << t.name;
  }
}

TEST(TensorTypes, ReferenceAndRelativeError) {
  Matrix a{2, 2, {{0, 1}, {0, 2}, {0, 3}, {0, 4}}};
  Matrix b{1, 2, {{0, 5}, {0, 6}}};  // N x K
  EXPECT_EQ(reference_product(a, b), (std::vector<double>{17, 39}));
  EXPECT_EQ(relative_error({17, 39}, {17, 39}), 0);
  EXPECT_NEAR(relative_error({17, 40}, {17, 39}), 1 / std::sqrt(17.0 * 17 + 39 * 39), 1e-12);
  EXPECT_TRUE(std::isinf(relative_error({NAN, 39}, {17, 39})));
}

TEST(TensorCli, WgmmaRefusesShapesTheIsaForbids) {
  const auto n7 = run({"wgmma", "--shape", "64x7"});
  EXPECT_EQ(n7.code, 2);
  EXPECT_TRUE(mentions(n7.err, "a multiple of 8 from 8 to 256")) << n7.err;
  const auto m32 = run({"wgmma", "--shape", "32x64"});
  EXPECT_EQ(m32.code, 2);
  EXPECT_TRUE(mentions(m32.err, "M is always 64")) << m32.err;
  const auto s8 = run({"wgmma", "--dtype", "s8", "--shape", "64x40"});
  EXPECT_EQ(s8.code, 2);
  EXPECT_TRUE(mentions(s8.err, "8, 16, 24 or a multiple of 16")) << s8.err;
  EXPECT_EQ(run({"wgmma", "--shape", "64by8"}).code, 2);
}

TEST(TensorCli, UnknownTypesAndAccumulatorsListWhatIsValid) {
  const auto fp64 = run({"wgmma", "--dtype", "fp64"});
  EXPECT_EQ(fp64.code, 2);
  EXPECT_TRUE(mentions(fp64.err, "--dtype fp64: wgmma takes bf16, fp16, tf32, e4m3, e5m2, s8")) << fp64.err;
  const auto acc = run({"wgmma", "--dtype", "bf16", "--acc", "f16"});
  EXPECT_EQ(acc.code, 2);
  EXPECT_TRUE(mentions(acc.err, "bf16 accumulates in f32 only")) << acc.err;
  const auto e5m2 = run({"mma-sync", "--dtype", "e5m2"});
  EXPECT_EQ(e5m2.code, 2);
  EXPECT_TRUE(mentions(e5m2.err, "mma.sync takes bf16, fp16, tf32, e4m3, s8")) << e5m2.err;
  EXPECT_EQ(run({"tensor-cores", "--dtype", "fp64"}).code, 2);
  EXPECT_EQ(run({"occupancy", "--dtype", "e5m2", "--kernel", "mma-sync"}).code, 2);
}

TEST(TensorCli, CountsOutOfRange) {
  const auto warps = run({"mma-sync", "--warps-per-sm", "6"});
  EXPECT_EQ(warps.code, 2);
  EXPECT_TRUE(mentions(warps.err, "1 to 4, or a multiple of 4 up to 64")) << warps.err;
  EXPECT_EQ(run({"mma-sync", "--ilp", "9"}).code, 2);
  EXPECT_EQ(run({"wgmma", "--warpgroups", "0"}).code, 2);
  EXPECT_EQ(run({"occupancy", "--kernel", "bogus"}).code, 2);
  EXPECT_EQ(run({"wgmma", "--a", "global"}).code, 2);
}

TEST(TensorCli, OccupancyAndAccumulatorOptionsSayWhatIsValid) {
  const auto shape = run({"occupancy", "--shape", "64x7"});
  EXPECT_EQ(shape.code, 2);
  EXPECT_TRUE(mentions(shape.err, "a multiple of 8 from 8 to 256")) << shape.err;
  const auto ilp = run({"occupancy", "--ilp", "0"});
  EXPECT_EQ(ilp.code, 2);
  EXPECT_TRUE(mentions(ilp.err, "--ilp")) << ilp.err;
  const auto acc = run({"wgmma", "--acc", "f64"});
  EXPECT_EQ(acc.code, 2);
  EXPECT_TRUE(mentions(acc.err, "--acc f64: give f32, f16 or s32")) << acc.err;
  EXPECT_EQ(run({"mma-sync", "--ilp", "0"}).code, 2);
}
