#pragma once
// Which keys a query attends, the one rule every attention kernel, its work split and the
// reference follow (constexpr: host-tested in tests/host/test_attention_mask.cpp, called on the
// device too). Without a mask, every key of the sequence. With the causal mask aligned to the
// bottom-right corner (FlashAttention 2.1+'s convention): query i attends keys j <= i + shift,
// shift = keys - queries, so the last query sees every key; with more queries than keys the first
// queries - keys queries see none, and their O is 0 and LSE +inf (exp(s - LSE) = 0 for every key,
// as FlashAttention writes them). With as many queries as keys it is the usual lower triangle.
namespace attention {

struct Mask {
  int keys;   // keys per sequence
  int shift;  // keys - queries: where the causal diagonal lies
  bool causal;

  constexpr bool attends(int query, int key) const { return key < keys && !(causal && key > query + shift); }
  // Whether a kernel masks the score of (query, key): each pair not attended, except that a query
  // attending no key keeps key 0 (as query -shift does), so its softmax stays finite; the store
  // then gives such a row O = 0 and LSE = +inf (attends_none).
  constexpr bool hides(int query, int key) const { return !attends(query < -shift ? -shift : query, key); }
  // Whether query `query` attends no key (causal, more queries than keys: the first ones).
  constexpr bool attends_none(int query) const { return causal && query + shift < 0; }
  // One past the last key query `query_end` - 1 attends, and so every query before it (0: none).
  constexpr int key_end(int query_end) const {
    if (!causal) return keys;
    const int end = query_end + shift;
    return end < 0 ? 0 : end < keys ? end : keys;
  }
  // The first query that attends key `key` (causal: key - shift, at least 0).
  constexpr int first_query(int key) const { return causal && key - shift > 0 ? key - shift : 0; }
  // Whether the tile of queries [query0, query0 + rows) x keys [key0, key0 + cols) holds a pair
  // not attended, so its scores must be masked.
  constexpr bool needs_mask(int query0, int key0, int cols) const {
    return key0 + cols > keys || (causal && key0 + cols - 1 > query0 + shift);
  }
};

}  // namespace attention
