// The Hopper Based kernel's feature map (kernels/based/feature_map.hpp): f_q(q) . f_k(k) is
// phi(q.k / 4), each term of it once.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <set>
#include <utility>

#include "kernels/based/feature_map.hpp"

namespace {

using Row = std::array<double, based::kFeatureDim>;

double entry(const Row& x, int a) { return a == based::kOne ? 1.0 : x[a]; }

TEST(BasedFeatureMap, SumsToPhiOfTheScaledProduct) {
  std::mt19937 rng(20261202);
  std::normal_distribution<double> normal(0.0, 1.5);
  for (int trial = 0; trial < 200; ++trial) {
    Row q, k;
    for (double& x : q) x = normal(rng);
    for (double& x : k) x = normal(rng);
    double dot = 0.0;
    for (int a = 0; a < based::kFeatureDim; ++a) dot += q[a] * k[a];
    const double x = dot / 4, phi = 1 + x + x * x / 2;
    double sum = 0.0;
    for (int f = 0; f < based::kFeatures; ++f) {
      const based::Feature t = based::feature(f);
      sum += t.q_scale * entry(q, t.a) * entry(q, t.b) * entry(k, t.a) * entry(k, t.b);
    }
    EXPECT_NEAR(sum, phi, 1e-12 * (1 + std::abs(phi))) << "trial " << trial;
  }
}

// 1 + 16 + 136 terms (the constant, the linear terms, the unordered pairs with the squares), no
// term twice, and the rest padding: the fold saves what it claims.
TEST(BasedFeatureMap, EachTermOnceThenPadding) {
  std::set<std::pair<int, int>> terms;
  int padding = 0;
  for (int f = 0; f < based::kFeatures; ++f) {
    const based::Feature t = based::feature(f);
    if (t.q_scale == 0.0f) {
      ++padding;
      continue;
    }
    EXPECT_TRUE(terms.insert(std::minmax(t.a, t.b)).second) << "feature " << f << " repeats (" << t.a << ", " << t.b << ")";
  }
  const int kf = based::kFeatureDim;
  EXPECT_EQ(int(terms.size()), 1 + kf + kf * (kf + 1) / 2);
  EXPECT_EQ(padding, based::kFeatures - int(terms.size()));
}

// The kernel's denominator state arrives as the Gram matrix sum k k^T (and sum k, and the count):
// every feature is found again from its pair, and each pair in exactly one of its two orders.
TEST(BasedFeatureMap, EveryFeatureIsFoundFromItsPairInOneOrder) {
  for (int f = 0; f < based::kFeatures; ++f) {
    const based::Feature t = based::feature(f);
    if (t.q_scale == 0.0f) continue;  // padding
    EXPECT_EQ(based::feature_of(t.a, t.b), f) << "(" << t.a << ", " << t.b << ")";
  }
  for (int a = 0; a <= based::kOne; ++a)
    for (int b = a; b <= based::kOne; ++b) {
      const int ab = based::feature_of(a, b), ba = based::feature_of(b, a);
      if (a == b) {
        EXPECT_GE(ab, 0) << a;
      } else {
        EXPECT_NE(ab >= 0, ba >= 0) << "(" << a << ", " << b << "): " << ab << " and " << ba;
      }
    }
}

}  // namespace
