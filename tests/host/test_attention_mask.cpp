// The attention mask (kernels/attention/mask.hpp) against its definition, for every pair of
// query and key counts up to 40, causal or not: query i attends key j iff j < keys and, causal,
// j <= i + keys - queries (bottom-right aligned). Each of the mask's helpers is checked by brute
// force over the pairs it summarises.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/mask.hpp"

using attention::Mask;

namespace {

constexpr int kMaxLength = 40;

bool defined_attends(int queries, int keys, bool causal, int query, int key) {
  return key < keys && (!causal || key <= query + keys - queries);
}

// f(queries, keys, mask) for every pair of counts in 1..kMaxLength, causal or not, up to the
// first failure: f's ASSERTs end it at its first, so a wrong mask reports one pair, not thousands.
template <class F>
void for_each_shape(F f) {
  for (const bool causal : {false, true})
    for (int queries = 1; queries <= kMaxLength; ++queries)
      for (int keys = 1; keys <= kMaxLength; ++keys) {
        if (testing::Test::HasFailure()) return;
        f(queries, keys, attention::mask_of({1, 1, 1, queries, 64, causal, keys}));
      }
}

std::string describe(int queries, Mask mask) {
  return "queries " + std::to_string(queries) + " keys " + std::to_string(mask.keys) + " causal " +
         std::to_string(mask.causal);
}

}  // namespace

TEST(AttentionMask, MaskOfTheShape) {
  EXPECT_EQ(attention::mask_of({2, 4, 2, 100, 64, true}).keys, 100);  // seq_k 0: as many keys as queries
  EXPECT_EQ(attention::mask_of({2, 4, 2, 100, 64, true}).shift, 0);
  const Mask m = attention::mask_of({2, 4, 2, 100, 64, true, 30});
  EXPECT_EQ(m.keys, 30);
  EXPECT_EQ(m.shift, -70);
  EXPECT_TRUE(m.causal);
}

TEST(AttentionMask, AttendsFollowsTheDefinition) {
  for_each_shape([](int queries, int keys, Mask mask) {
    for (int q = 0; q < queries; ++q)
      for (int k = 0; k < keys + 3; ++k) {
        ASSERT_EQ(mask.attends(q, k), defined_attends(queries, keys, mask.causal, q, k))
            << describe(queries, mask) << " query " << q << " key " << k;
      }
  });
}

// The last query attends every key; with more queries than keys the first queries - keys attend
// none (causal), and every other query some: attends_none names those.
TEST(AttentionMask, QueriesAttendingNoKeyAreTheFirstSurplus) {
  for_each_shape([](int queries, int keys, Mask mask) {
    for (int k = 0; k < keys; ++k) ASSERT_TRUE(mask.attends(queries - 1, k)) << describe(queries, mask);
    const int blind = mask.causal ? std::max(0, queries - keys) : 0;
    for (int q = 0; q < queries; ++q) {
      bool any = false;
      for (int k = 0; k < keys; ++k) any = any || mask.attends(q, k);
      ASSERT_EQ(any, q >= blind) << describe(queries, mask) << " query " << q;
      ASSERT_EQ(mask.attends_none(q), !any) << describe(queries, mask) << " query " << q;
    }
  });
}

// key_end(q_end) is one past the last key the queries before q_end attend (0 for none); from
// q_end = queries on, every key. Callers ask for at least one query (q_end >= 1).
TEST(AttentionMask, KeyEndIsOnePastTheLastAttendedKey) {
  for_each_shape([](int queries, int keys, Mask mask) {
    int end = 0;
    for (int q_end = 1; q_end <= queries; ++q_end) {
      for (int k = 0; k < keys; ++k)
        if (mask.attends(q_end - 1, k)) end = std::max(end, k + 1);
      ASSERT_EQ(mask.key_end(q_end), end) << describe(queries, mask) << " q_end " << q_end;
    }
    for (int q_end = queries; q_end < queries + 70; ++q_end) {
      ASSERT_EQ(mask.key_end(q_end), keys) << describe(queries, mask) << " q_end " << q_end;
    }
  });
}

TEST(AttentionMask, FirstQueryIsTheFirstToAttendTheKey) {
  for_each_shape([](int queries, int keys, Mask mask) {
    for (int k = 0; k < keys; ++k) {
      int first = 0;
      while (first < queries && !mask.attends(first, k)) ++first;
      ASSERT_EQ(mask.first_query(k), first) << describe(queries, mask) << " key " << k;
    }
  });
}

// needs_mask(q0, k0, cols) takes no row count: it must be right for every tile of rows >= 1 from
// q0. Whether a tile holds a pair not attended grows with its rows, so agreeing with the one-row
// tile and with the tile down to the last query covers every row count in between.
TEST(AttentionMask, NeedsMaskIffTheTileHoldsAPairNotAttended) {
  for_each_shape([](int queries, int keys, Mask mask) {
    for (int q0 = 0; q0 < queries; ++q0) {
      bool missed_by_q0[kMaxLength + 8] = {}, missed_by_any[kMaxLength + 8] = {};  // per key
      for (int k = 0; k < keys + 8; ++k) {
        missed_by_q0[k] = !mask.attends(q0, k);
        for (int q = q0; q < queries; ++q) missed_by_any[k] = missed_by_any[k] || !mask.attends(q, k);
      }
      for (int k0 = 0; k0 < keys; ++k0) {
        bool one_row = false, all_rows = false;
        for (int cols = 1; k0 + cols <= keys + 8; ++cols) {
          one_row = one_row || missed_by_q0[k0 + cols - 1];
          all_rows = all_rows || missed_by_any[k0 + cols - 1];
          ASSERT_EQ(mask.needs_mask(q0, k0, cols), one_row)
              << describe(queries, mask) << " q0 " << q0 << " k0 " << k0 << " cols " << cols;
          ASSERT_EQ(mask.needs_mask(q0, k0, cols), all_rows)
              << describe(queries, mask) << " q0 " << q0 << " k0 " << k0 << " cols " << cols;
        }
      }
    }
  });
}

// With as many queries as keys the causal mask is the plain lower triangle.
TEST(AttentionMask, SquareCausalIsTheLowerTriangle) {
  for (int n = 1; n <= kMaxLength; ++n) {
    const Mask mask = attention::mask_of({1, 1, 1, n, 64, true});
    for (int q = 0; q < n; ++q) {
      for (int k = 0; k < n; ++k) ASSERT_EQ(mask.attends(q, k), k <= q) << "n " << n << " q " << q << " k " << k;
      ASSERT_EQ(mask.key_end(q + 1), q + 1) << "n " << n << " q " << q;
      ASSERT_EQ(mask.first_query(q), q) << "n " << n << " q " << q;
    }
  }
}
