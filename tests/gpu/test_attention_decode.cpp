// The decode step (attention::decode::Decode) against the fp32 reference on each sequence alone
// (reference_varlen.hpp): O and LSE of every row, on poisoned outputs, for caches in pages of 16, 64
// and 256 tokens scattered across the pool in random order, lengths no multiple of a page, caches
// of 0 and 1 keys, a long sequence among short ones, 1 to 16 new tokens (causal among themselves),
// grouped-query heads 4:1 and 8:1, head dims 64 and 128, and the keys in one block or split among
// several (by the rule, and forced); bf16 caches and e4m3 ones with a scale per kv head.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/attention/decode.hpp"
#include "kernels/attention/reference_fp8.hpp"
#include "kernels/attention/reference_varlen.hpp"
#include "src/device_buffer.hpp"
#include "tests/gpu/fresh_rng.hpp"
#include "tests/gpu/kernel_bounds.hpp"

namespace check = tkprobe::attention_check;
namespace decode = attention::decode;
using bf16 = __nv_bfloat16;
using tkprobe::DeviceBuffer;

namespace {

using kernel_bounds::attention_forward::kMaxLseError;
using kernel_bounds::attention_forward::kMaxRelError;
using kernel_bounds::attention_forward::kMaxRowError;

constexpr int kUnusedEntry = INT_MAX;  // the table past a sequence's pages: never to be read

std::string describe(const decode::Shape& s, const std::vector<int>& lengths, int splits) {
  std::ostringstream out;
  out << "H=" << s.heads << " HKV=" << s.kv_heads << " D=" << s.head_dim << " tokens=" << s.q_tokens
      << (s.cache == decode::Cache::e4m3 ? " e4m3" : " bf16") << " page=" << s.page_size << (s.causal ? " causal" : "")
      << " splits=" << splits << " lengths";
  for (int n : lengths) out << " " << n;
  return out.str();
}

// The shape of a step over sequences of `lengths` keys: the table as wide as the longest needs,
// the pool twice the pages in use and one more.
decode::Shape shape_for(int tokens, int heads, int kv_heads, int head_dim, int page_size, bool causal,
                        const std::vector<int>& lengths) {
  int pages = 1, widest = 1;
  for (int n : lengths) {
    pages += 2 * decode::ceil_div(n, page_size);
    widest = std::max(widest, decode::ceil_div(n, page_size));
  }
  return {int(lengths.size()), tokens, heads, kv_heads, head_dim, page_size, widest, pages, causal, 0};
}

// Each sequence's pages from the pool in random order, every other one (so no sequence's pages
// are neighbours by accident); the entries past a sequence's pages hold kUnusedEntry.
std::vector<int> scattered_table(const decode::Shape& s, const std::vector<int>& lengths, std::mt19937_64& rng) {
  std::vector<int> order(s.pages);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<int> table(std::size_t(s.batch) * s.pages_per_seq, kUnusedEntry);
  for (int b = 0, next = 0; b < s.batch; ++b)
    for (int p = 0; p < decode::ceil_div(lengths[b], s.page_size); ++p, next += 2)
      table[std::size_t(b) * s.pages_per_seq + p] = order[next];
  return table;
}

// A decode step's inputs on the GPU: random Q and caches (an e4m3 one quantized from bf16 with
// e4m3_head_scales, K's and V's different), the scattered table.
struct Step {
  Step(const decode::Shape& shape, std::vector<int> lens, std::mt19937_64& rng)
      : s(shape),
        lengths(std::move(lens)),
        table(scattered_table(s, lengths, rng)),
        q(std::size_t(s.batch) * s.q_tokens * s.heads * s.head_dim),
        k(std::size_t(s.pages) * s.page_size * s.kv_heads * s.head_dim),
        v(k.size()),
        table_d(table.size()),
        lengths_d(lengths.size()) {
    for (const DeviceBuffer<bf16>* x : {&q, &k, &v}) check::fill_normal(x->get(), x->size(), rng(), nullptr);
    table_d.upload(table);
    lengths_d.upload(lengths);
    if (s.cache == decode::Cache::e4m3) e4m3.emplace(k.get(), v.get(), k.size(), s.kv_heads, s.head_dim, nullptr);
  }
  decode::Tensors tensors(bf16* o, float* lse) const {
    if (s.cache == decode::Cache::bf16) return {q.get(), k.get(), v.get(), table_d.get(), lengths_d.get(), o, lse};
    return {q.get(), e4m3->k.get(), e4m3->v.get(),       table_d.get(),      lengths_d.get(),
            o,       lse,           e4m3->k_scale.get(), e4m3->v_scale.get()};
  }

  decode::Shape s;
  std::vector<int> lengths, table;
  DeviceBuffer<bf16> q, k, v;
  DeviceBuffer<int> table_d, lengths_d;
  std::optional<check::E4m3KvCache> e4m3;
};

// The step on poisoned outputs with `splits` (0: the rule's), against the reference.
void expect_step_matches(const Step& in, int splits) {
  const decode::Shape& s = in.s;
  ASSERT_EQ(decode::refusal(s), "");
  DeviceBuffer<bf16> o(in.q.size());
  DeviceBuffer<float> lse(std::size_t(s.batch) * s.heads * s.q_tokens);
  o.poison();
  lse.poison();
  const decode::Tensors t = in.tensors(o.get(), lse.get());
  const decode::Decode step(t, s, splits);
  SCOPED_TRACE(describe(s, in.lengths, step.splits()));
  if (splits > 0) {
    EXPECT_EQ(step.splits(), splits);
  }
  step(nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const check::Errors e = check::compare_decode_to_reference(t, s, in.lengths, nullptr);
  EXPECT_LT(e.rel_error, kMaxRelError);
  EXPECT_LT(e.worst_row_error, kMaxRowError);
  EXPECT_LT(e.lse_error, kMaxLseError);
}

using gpu_inputs::fresh_rng;

}  // namespace

// One new token per sequence, GQA 4:1 (one row tile: four warps share each key tile), every page
// size, the split count by the rule, none, and forced past the shortest sequences' tiles.
TEST(DecodeAttention, OneTokenMatchesTheReference) {
  auto rng = fresh_rng();
  const std::vector<int> lengths = {1, 17, 100, 1000, 0, 4097, 63};
  for (int d : {64, 128})
    for (int page : {16, 64, 256})
      for (int splits : {0, 1, 7}) {
        const Step step(shape_for(1, 32, 8, d, page, false, lengths), lengths, rng);
        expect_step_matches(step, splits);
      }
}

// Speculative decoding: 2 to 16 new tokens attending each other causally, GQA 8:1 (up to 128 rows
// per kv head: two chunks of four row tiles), and a step with more new tokens than cached keys,
// whose first tokens attend none.
TEST(DecodeAttention, NewTokensAttendEachOtherCausally) {
  auto rng = fresh_rng();
  const std::vector<std::vector<int>> batches = {{16, 300, 1, 2049}, {5, 0, 3, 40}};
  for (const auto& lengths : batches)
    for (int tokens : {2, 5, 16})
      for (bool causal : {false, true})
        for (int splits : {0, 3}) {
          const Step step(shape_for(tokens, 64, 8, 128, 64, causal, lengths), lengths, rng);
          expect_step_matches(step, splits);
        }
}

// A long cache among short ones at batch 1 and 3, head dim 64, MHA (a group of one: 1 row, one row
// tile), where the rule splits the long sequence's keys across many blocks.
TEST(DecodeAttention, LongCacheSplitsAcrossBlocks) {
  auto rng = fresh_rng();
  for (const std::vector<int>& lengths : {std::vector<int>{32768}, std::vector<int>{16384, 3, 257}})
    for (int splits : {0, decode::kMaxSplits}) {
      const Step step(shape_for(1, 8, 8, 64, 256, false, lengths), lengths, rng);
      expect_step_matches(step, splits);
    }
}

// An e4m3 cache: one and several new tokens (causal or not), GQA 4:1 and 8:1, head dims 64 and
// 128, pages of 16 and 64, lengths no multiple of a page, an empty cache, split by the rule and
// forced; the products in f16 (the queries too), so the bf16 forward's bounds hold.
TEST(DecodeAttention, E4m3CacheMatchesTheReferenceOnItsDequantizedValues) {
  auto rng = fresh_rng();
  const std::vector<int> lengths = {1, 100, 0, 4097, 63, 2000};
  for (int d : {64, 128})
    for (int page : {16, 64})
      for (auto [tokens, heads, causal] : {std::tuple{1, 32, false}, {5, 64, true}})
        for (int splits : {0, 1, 5}) {
          decode::Shape s = shape_for(tokens, heads, 8, d, page, causal, lengths);
          s.cache = decode::Cache::e4m3;
          expect_step_matches(Step(s, lengths, rng), splits);
        }
}

// A contiguous cache: one page per sequence holding all its keys, the table b -> b.
TEST(DecodeAttention, ContiguousCacheIsOnePagePerSequence) {
  auto rng = fresh_rng();
  const std::vector<int> lengths = {4096, 4096, 4000};
  Step step(shape_for(1, 16, 4, 128, 4096, false, lengths), lengths, rng);
  step.s.pages = int(lengths.size());
  std::iota(step.table.begin(), step.table.end(), 0);
  step.table_d.upload(step.table);
  expect_step_matches(step, 0);
}
