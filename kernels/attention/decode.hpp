#pragma once
// Decode attention over a paged KV cache: each sequence's few new query tokens against every key
// it has cached. The layout is FlashAttention's flash_attn_with_kvcache's (and vLLM's):
//   Q, O         [batch][q_tokens][heads][D] bf16 (LSE float [batch][heads][q_tokens])
//   K, V caches  [pages][page_size][kv_heads][D] bf16, or e4m3 with a float scale per kv head for
//                each (k_scale, v_scale: a key is its entry x k_scale[its head]; the products then
//                run in f16, so queries must lie within its +-65504): a pool of pages
//   block table  [batch][pages_per_seq] int32: sequence b's key j lies in page table[b][j / page_size],
//                slot j % page_size
//   lengths      [batch] int32: the keys each sequence holds, its new tokens included
// Both tables are device data, as a serving engine keeps them between steps. Query head h reads
// key/value head h / (heads / kv_heads). With `causal` the new tokens see each other causally: token
// t of a sequence of L keys attends keys j <= L - q_tokens + t (mask.hpp's bottom-right rule); a
// row attending no key (an empty cache) gets O = 0 and LSE = +inf, as every kernel here writes it.
// A contiguous cache [batch][capacity][kv_heads][D] is the paged one with one page per sequence.
//
// How the work is cut (constexpr, host-tested in tests/host/test_attention_decode.cpp): one kv head
// of one sequence at a time, so each key is read once for all the query heads that share it. Its
// rows (q_tokens x the heads of the group, token-major) go to a block of kWarps warps in chunks of
// up to kWarps row tiles; the warps that share a row tile share out each key tile's keys, so a
// block of one row tile still has four warps reading. Where too few blocks would fill the GPU the
// keys are split among blocks as well (split-KV), each writing a partial softmax that a combine
// kernel merges.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "kernels/attention/mask.hpp"

namespace attention::decode {

inline constexpr int kWarps = 4;
inline constexpr int kTileRows = 16;  // a warp's rows: one mma.sync M
inline constexpr int kKeys = 64;      // keys per key tile, shared out among the warps of a row tile
inline constexpr int kMaxSplits = 64;
// The running max's start: below any score, yet finite, and a power of two, so the online
// softmax's FFMA kNoScore x scale - round(kNoScore x scale) is exactly 0 and a warp that has seen
// no key rescales its l = 0 by 2^0. (-1e30 left a rounding residue: 2^(+8e20) = inf at D = 64, NaN.)
inline constexpr float kNoScore = -0x1p100f;
// The fewest keys a split takes: four key tiles, so a block's start (its query rows, the
// pipeline's first tiles) and its share of the combine stay small against its reads.
inline constexpr int kMinSplitKeys = 4 * kKeys;

constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

enum class Cache { bf16, e4m3 };  // the K and V caches' element type

struct Shape {
  int batch, q_tokens, heads, kv_heads, head_dim;
  int page_size, pages_per_seq, pages;  // a page's tokens, the block table's row, the pool's pages
  bool causal;
  int max_keys;  // at most this many keys in any sequence (sizes the split); 0: the table's capacity
  Cache cache = Cache::bf16;
};

constexpr int cache_element_bytes(Shape s) { return s.cache == Cache::e4m3 ? 1 : 2; }

constexpr int capacity(Shape s) { return s.page_size * s.pages_per_seq; }
constexpr int max_keys(Shape s) { return s.max_keys > 0 && s.max_keys < capacity(s) ? s.max_keys : capacity(s); }
constexpr int group_size(Shape s) { return s.heads / s.kv_heads; }
constexpr int rows(Shape s) { return s.q_tokens * group_size(s); }  // one kv head's query rows

// Row r of a kv head's rows is token r / group of query head (kv head) x group + r % group.
struct Row {
  int token, head_in_group;
};
constexpr Row row_of(int r, int group) { return {r / group, r % group}; }

// How a shape's rows are cut: row tiles per block (1, 2 or 4: the warps sharing a row tile
// divide the key tile evenly) and the blocks (chunks) per kv head.
struct RowCut {
  int row_tiles, chunks;
};
constexpr RowCut row_cut(int rows) {
  const int tiles = ceil_div(rows, kTileRows);
  if (tiles >= kWarps) return {kWarps, ceil_div(tiles, kWarps)};
  return {tiles <= 1 ? 1 : tiles <= 2 ? 2 : kWarps, 1};
}
constexpr int keys_per_warp(int row_tiles) { return kKeys * row_tiles / kWarps; }

// Splits of each (sequence, kv head, chunk)'s keys: one where the blocks without splitting fill
// `resident` (the blocks the GPU holds at once), else as many as fit in it (never a second, partial
// wave), each at least kMinSplitKeys of the longest sequence's keys, at most kMaxSplits.
// docs/decisions/034-decode-split-rule.md gives the sweep it comes from.
constexpr int splits_for(int blocks, int longest, int resident) {
  if (blocks >= resident) return 1;
  const int by_fill = resident / blocks, by_keys = ceil_div(longest, kMinSplitKeys);
  const int n = by_fill < by_keys ? by_fill : by_keys;
  return n < 1 ? 1 : n > kMaxSplits ? kMaxSplits : n;
}

// The keys [begin, end) split `split` of `splits` reads of a sequence of `keys` keys whose rows
// run up to token `last_token` (causal: none past that token's last key): whole key tiles, the
// splits in order, the last ones empty where the tiles run out.
struct KeyRange {
  int begin, end;
};
constexpr KeyRange split_keys(int keys, int split, int splits, Mask mask, int last_token) {
  const int tiles_per_split = ceil_div(ceil_div(keys, kKeys), splits);
  const int begin = split * tiles_per_split * kKeys, end = begin + tiles_per_split * kKeys;
  const int limit = mask.key_end(last_token + 1);
  return {begin, end < limit ? end : limit};
}

// n / divisor for 0 <= n < 2^31 as a multiply and a shift: the table walk divides every key it
// gathers by the page size, and a division is some 25 instructions. multiplier = ceil(2^shift /
// divisor) with shift = 31 + ceil(log2 divisor) fits 32 bits, and its error stays under one part
// in 2^31 of the quotient, so the floor is exact (Granlund and Montgomery's round-up method).
struct Divider {
  int divisor;
  unsigned multiplier;
  int shift;
};
constexpr Divider divider_for(int divisor) {  // divisor >= 1
  int log2 = 0;
  while ((1ll << log2) < divisor) ++log2;
  const int shift = 31 + log2;
  return {divisor, unsigned(((1ull << shift) + divisor - 1) / divisor), shift};
}
constexpr int quotient(int n, Divider d) { return int((static_cast<unsigned long long>(n) * d.multiplier) >> d.shift); }

// The page-table walk: where key `key` of a sequence lies in the pool, as a row of the cache
// viewed [pages x page_size][kv_heads][D] (-1: the table names no page of the pool there, and the
// kernel reads zeros rather than out of bounds). `page_size`: the divider of the page size.
constexpr long long cache_row(const int* table_row, int key, Divider page_size, int pages) {
  const int in_table = quotient(key, page_size), page = table_row[in_table];
  return page >= 0 && page < pages ? (long long)page * page_size.divisor + (key - in_table * page_size.divisor) : -1;
}

// A sequence's keys as the kernel takes them: its length clamped to the table's capacity, so no
// length reads past the table's row.
constexpr int clamped_keys(int length, Shape s) { return length < 0 ? 0 : length > capacity(s) ? capacity(s) : length; }

// Why the decode kernel cannot run `s` ("" when it can), naming what is valid.
std::string refusal(Shape s);

// The tensors, all device memory (the layout above); Q, the caches and O 16-byte aligned. The
// caches hold Shape::cache's type; the scales (kv_heads floats each) are an e4m3 cache's alone.
struct Tensors {
  const __nv_bfloat16* q;
  const void *k_cache, *v_cache;
  const int *block_table, *lengths;
  __nv_bfloat16* o;
  float* lse;
  const float *k_scale = nullptr, *v_scale = nullptr;
};

// The splits a Decode of `s` takes by itself on a GPU that holds `resident` of its blocks at once
// (splits_for); on the current GPU (s must pass refusal); and the scratch the partial results of
// `splits` splits take (16-byte aligned device memory; 0 bytes for one split).
int splits(Shape s, int resident);
int splits_here(Shape s);
std::size_t scratch_bytes(Shape s, int splits);

// A decode step ready to launch: one kernel, and the combine kernel after it where the keys are
// split. `splits` > 0 forces that many (at most kMaxSplits), to measure the rule; `scratch` null
// (allocated here) or scratch_bytes(s, splits) that outlive the launches. Throws
// std::invalid_argument with refusal(s) when that is not empty or an e4m3 cache comes without its
// scales, std::runtime_error when the scratch cannot be allocated.
class Decode {
 public:
  Decode(const Tensors& t, Shape s, int splits = 0, float* scratch = nullptr);
  void operator()(cudaStream_t stream) const { launch_(stream); }
  int splits() const { return splits_; }

 private:
  std::shared_ptr<void> scratch_;
  std::function<void(cudaStream_t)> launch_;
  int splits_ = 1;
};

}  // namespace attention::decode
