// The tile DSL's warpgroup-scope operations on the GPU: wgmma through warpgroup::mma_AB/mma_ABt
// with A from shared memory or registers, overwriting the accumulator or adding to it, and TMA
// tile loads and stores of 16-bit and float tiles, and the producer/consumer ring (tk::pipeline)
// with two stage counts (tests/gpu/dsl_warpgroup_kernels.hpp).
// Operands (and the accumulator's starting values) are fresh random values +-(1 + m/8) 2^e,
// e in {-1, 0}: exact in bf16 and fp16, never zero; products are multiples of 2^-8 below 4, so
// their sums over K <= 160 plus C stay below 2^10 with at most 18 significant bits: exact in f32,
// so the results must equal a host reference in double. Outputs start poisoned.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "kernels/tk/layout/fragments.hpp"
#include "tests/gpu/dsl_warpgroup_kernels.hpp"

namespace wg = tkprobe::test_kernels::dsl_wg;

namespace {

constexpr int kM = 64;

struct Value {
  double v;
  std::uint16_t bits;
};

// +-(1 + m/8) 2^e in the type's bits.
Value random_value(wg::Half type, std::mt19937& rng) {
  const int sign = int(rng() % 2), m = int(rng() % 8), e = -int(rng() % 2);
  const double v = (sign ? -1 : 1) * (1 + m / 8.0) * std::ldexp(1.0, e);
  if (type == wg::Half::f16) return {v, std::uint16_t(sign << 15 | (e + 15) << 10 | m << 7)};
  const float f = float(v);
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return {v, std::uint16_t(u >> 16)};
}

std::vector<Value> random_matrix(int count, wg::Half type, std::mt19937& rng) {
  std::vector<Value> out(count);
  for (auto& x : out) x = random_value(type, rng);
  return out;
}

std::vector<std::uint16_t> bits(const std::vector<Value>& m) {
  std::vector<std::uint16_t> out;
  for (const auto& x : m) out.push_back(x.bits);
  return out;
}

const char* name(wg::Mma f) {
  const char* names[] = {"mma_ABt (A in smem)",      "mma_AB (A in smem)", "mma_ABt (A in registers)",
                         "mma_AB (A in registers)", "mma_AtB",            "mma_AtBt"};
  return names[int(f)];
}

}  // namespace

TEST(DslWarpgroup, MmaFormsEqualTheHostProduct) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (wg::Mma form : {wg::Mma::ABt_ss, wg::Mma::AB_ss, wg::Mma::ABt_rs, wg::Mma::AB_rs, wg::Mma::AtB_ss, wg::Mma::AtBt_ss})
    for (wg::Half type : {wg::Half::bf16, wg::Half::f16})
      for (const auto& [k, n] : wg::kMmaShapes)
        for (const bool accumulate : {false, true}) {
          const bool b_transposed = form == wg::Mma::ABt_ss || form == wg::Mma::ABt_rs || form == wg::Mma::AtBt_ss;
          const bool a_transposed = form == wg::Mma::AtB_ss || form == wg::Mma::AtBt_ss;
          const auto a = random_matrix(kM * k, type, rng), b = random_matrix(n * k, type, rng);
          // The accumulator's starting values: the same kind of values, as floats (exact).
          std::vector<float> c;
          if (accumulate)
            for (const auto& x : random_matrix(kM * n, type, rng)) c.push_back(float(x.v));
          const auto d = wg::mma(form, type, k, n, bits(a), bits(b), c);
          int wrong = 0;
          for (int i = 0; i < kM; ++i)
            for (int j = 0; j < n; ++j) {
              double want = accumulate ? c[i * n + j] : 0.0;
              for (int x = 0; x < k; ++x) {
                const double ax = a_transposed ? a[x * kM + i].v : a[i * k + x].v;
                want += ax * (b_transposed ? b[j * k + x].v : b[x * n + j].v);
              }
              wrong += d[i * n + j] != want;  // exact: see the file comment (NaN, the poison, fails too)
            }
          EXPECT_EQ(wrong, 0) << name(form) << (type == wg::Half::bf16 ? " bf16 " : " fp16 ") << "K=" << k << " N=" << n
                              << (accumulate ? " accumulating onto C" : "");
        }
}

namespace {

// The TMA round trip of a tile of Bits-sized elements (tma_round_trip's overloads): random
// bits in, the tile at (1, 1) must come back bit for bit, the rest of the output untouched.
// Float bits are random finite values (exponent field never all ones).
template <class Bits>
void check_tma_round_trip(std::mt19937& rng, Bits untouched, const char* what) {
  for (const auto& [rows, cols] : wg::kTmaShapes) {
    const int width = 2 * cols, height = 2 * rows;
    std::vector<Bits> tensor(std::size_t(width) * height);
    for (auto& x : tensor) {
      x = Bits(rng());
      if constexpr (sizeof(Bits) == 4) x &= ~(Bits(1) << 30);  // the exponent's top bit clear: finite
    }
    const int row_tile = 1, col_tile = 1;
    const auto out =
        wg::tma_round_trip(rows, cols, tensor, std::vector<Bits>(tensor.size(), untouched), row_tile, col_tile);
    int wrong = 0;
    for (int r = 0; r < height; ++r)
      for (int c = 0; c < width; ++c) {
        const bool inside = r / rows == row_tile && c / cols == col_tile;
        wrong += out[r * width + c] != (inside ? tensor[r * width + c] : untouched);
      }
    EXPECT_EQ(wrong, 0) << what << " " << rows << "x" << cols << " tile";
  }
}

}  // namespace

TEST(DslWarpgroup, TmaLoadsAndStoresATileInPlace) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  check_tma_round_trip<std::uint16_t>(rng, 0x7fc1, "16-bit");
  check_tma_round_trip<std::uint32_t>(rng, 0x7fc00001u, "float");
}

TEST(DslWarpgroup, TmaLoadsASharedVector) {
  std::vector<float> tensor(4 * wg::kVectorLength);
  for (std::size_t i = 0; i < tensor.size(); ++i) tensor[i] = float(i) + 0.5f;
  for (int offset : {0, 4, 3 * wg::kVectorLength}) {
    const auto got = wg::vector_load(tensor, offset);
    EXPECT_EQ(got, std::vector<float>(tensor.begin() + offset, tensor.begin() + offset + wg::kVectorLength))
        << "from " << offset;
  }
}

TEST(DslWarpgroup, PipelineRingDeliversEveryStepInOrder) {
  // More steps than stages, not a multiple of either stage count: every stage is reused with
  // both barrier parities, and a stage released too early or read before it landed shows up as
  // a wrong (or poisoned) tile.
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  constexpr int kSteps = 7, kTile = 64;
  for (const int stages : wg::kPipelineStages) {
    std::vector<std::uint16_t> tensor(std::size_t(kSteps) * kTile * kTile);
    for (auto& x : tensor) x = std::uint16_t(rng());
    const auto out = wg::pipeline_copy(stages, kSteps, tensor);
    int wrong = 0;
    for (std::size_t i = 0; i < tensor.size(); ++i) wrong += out[i] != tensor[i];
    EXPECT_EQ(wrong, 0) << stages << " stages, " << kSteps << " steps";
  }
}

TEST(DslWarpgroup, TurnsGoRoundInOrder) {
  constexpr int kRounds = 5;
  for (const int members : wg::kTurnMembers) {
    const auto order = wg::turn_order(members, kRounds);
    for (int i = 0; i < members * kRounds; ++i) {
      EXPECT_EQ(order[i], i) << members << " members: round " << i / members << ", member " << i % members;
    }
  }
}

// warp::copy_e4m3 then warpgroup::mma_ABt with the e4m3 tile as A from registers: the attention
// forward's P V (kernels/attention/hopper/config_fp8.cuh), against the host. P's values are e4m3
// numbers in [0, 2) ((1 + m/8) 2^e, e in -3..0, and 0), V's +-(1 + m/8) 2^e with e in {-1, 0};
// V^T holds each 32 keys in the order layout::p8_key gives, as transpose_v.cuh writes it. Not
// exact: Hopper's fp8 wgmma is reported to accumulate with fewer bits than f32 (about 14 kept,
// DeepSeek-V3's report), so each element must be within 2^-10 of the sum of |p v| over its keys,
// while a wrong fragment map or permutation pairs the wrong keys and misses by O(1).
TEST(DslWarpgroup, E4m3PTimesVTransposedFromRegistersEqualsTheHostProduct) {
  constexpr int kKeys = wg::kE4m3Keys, kDim = wg::kE4m3Dim;
  std::mt19937 rng(std::random_device{}());
  std::vector<float> p(kM * kKeys);
  for (float& x : p) x = rng() % 5 == 0 ? 0.0f : float((8 + rng() % 8) / 8.0 * std::ldexp(1.0, -int(rng() % 4)));
  std::vector<double> v(kKeys * kDim);
  std::vector<std::uint8_t> v_bits(kKeys * kDim);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const int sign = int(rng() % 2), m = int(rng() % 8), e = -int(rng() % 2);
    v[i] = (sign ? -1 : 1) * (1 + m / 8.0) * std::ldexp(1.0, e);
    v_bits[i] = std::uint8_t(sign << 7 | (e + 7) << 3 | m);  // e4m3: exponent bias 7, 3 mantissa bits
  }
  std::vector<std::uint8_t> vt(kDim * kKeys);
  for (int d = 0; d < kDim; ++d)
    for (int pos = 0; pos < kKeys; ++pos)
      vt[d * kKeys + pos] = v_bits[(pos / 32 * 32 + tk::layout::p8_key(pos % 32)) * kDim + d];
  const auto o = wg::e4m3_pv(p, vt);
  int wrong = 0;
  for (int r = 0; r < kM; ++r)
    for (int d = 0; d < kDim; ++d) {
      double want = 0, size = 0;
      for (int j = 0; j < kKeys; ++j) {
        want += double(p[r * kKeys + j]) * v[j * kDim + d];
        size += std::fabs(double(p[r * kKeys + j]) * v[j * kDim + d]);
      }
      const double got = o[r * kDim + d];
      if (!(std::fabs(got - want) <= std::ldexp(size, -10)) && ++wrong <= 5) {
        ADD_FAILURE() << "O(" << r << ", " << d << ") = " << got << ", want " << want;
      }
    }
  EXPECT_EQ(wrong, 0);
}
