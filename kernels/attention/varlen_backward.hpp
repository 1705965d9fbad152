#pragma once
// The Hopper backward's work on a packed batch (varlen.hpp), made on the host once: each sequence
// is cut as a dense batch of one (backward_schedule.hpp's kv_item and q_item on its own Schedule),
// and the items carry where the sequence lies.
//
// The scratch's per-row vectors and the reducing path's dQ accumulator are those of one matrix per
// head over the sequences' query rows, each sequence's rows padded to kRowPad on its own
// (`padded_offsets`): a query tile any kernel reads, and an accumulator tile any item reduces into,
// lies inside one sequence. The preprocess and the conversion walk those rows in blocks of kRowPad
// (`row_blocks`), each knowing its sequence's rows of the packed tensors.
#include <algorithm>
#include <vector>

#include "kernels/attention/backward_schedule.hpp"
#include "kernels/attention/varlen.hpp"

namespace attention::backward {

// Sequence b's first padded row, and the total: B + 1 entries, multiples of kRowPad.
inline std::vector<int> padded_offsets(const Varlen& s) {
  std::vector<int> out{0};
  for (int b = 0; b < s.batch(); ++b) out.push_back(out.back() + padded(s.queries(b)));
  return out;
}

// A kRowPad-row block of the padded rows: the packed row its first row is, and how many of its
// rows are queries (the rest pad: lse2 = +inf, D = 0, no dQ written).
struct RowBlock {
  int packed_row, rows;
};
inline std::vector<RowBlock> row_blocks(const Varlen& s) {
  std::vector<RowBlock> out;
  for (int b = 0; b < s.batch(); ++b)
    for (int r = 0; r < s.queries(b); r += kRowPad)
      out.push_back({s.cu_seqlens_q[b] + r, std::min(kRowPad, s.queries(b) - r)});
  return out;
}

// Scratch row g of a packed batch (`padded_rows` per head): head g / padded_rows, and the packed
// row its block of kRowPad holds there, if any.
constexpr QueryRow packed_query_row(const RowBlock* blocks, int padded_rows, std::size_t g) {
  const int r = int(g % padded_rows);
  const RowBlock b = blocks[r / kRowPad];
  return {int(g / padded_rows), b.packed_row + r % kRowPad, b.rows - r % kRowPad};
}

// A sequence's dense schedule: a batch of one, heads and mask its own.
inline Schedule sequence_schedule(const Varlen& s, int b) { return {1, s.heads, s.kv_heads, s.queries(b), s.mask(b)}; }

// Where an item's sequence lies: its index (its tensor maps), its first padded row (the scratch's),
// and its counts (its mask).
struct VarlenPlace {
  int seq, padded_row, queries, keys;
};
struct VarlenKvItem {
  KvItem item;
  VarlenPlace at;
};
struct VarlenQItem {
  QItem item;
  VarlenPlace at;
};

// Sequences longest first (most queries x keys), so the grid's blocks, which take the items in
// order, start the long ones first and finish together; each sequence's items in its dense order.
inline std::vector<int> longest_sequences_first(const Varlen& s) {
  std::vector<int> order;
  for (int b = 0; b < s.batch(); ++b) order.push_back(b);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return double(s.queries(a)) * s.keys(a) > double(s.queries(b)) * s.keys(b); });
  return order;
}

// Every dK/dV item (kv_item at `step` queries a step, `staggered` on the reducing path) of the
// sequences with queries and keys. A sequence with keys but no queries has none: its dK and dV
// are zeros the launch writes.
inline std::vector<VarlenKvItem> varlen_kv_items(const Varlen& s, int step, bool staggered) {
  const std::vector<int> first = padded_offsets(s);
  std::vector<VarlenKvItem> items;
  for (int b : longest_sequences_first(s)) {
    if (s.queries(b) == 0 || s.keys(b) == 0) continue;
    const Schedule one = sequence_schedule(s, b);
    for (int t = 0; t < kv_items(one); ++t)
      items.push_back({kv_item(one, t, step, staggered), {b, first[b], s.queries(b), s.keys(b)}});
  }
  return items;
}

// Every dQ item of the sequences with queries; a sequence without keys has items of no key tile,
// which store dQ = 0.
inline std::vector<VarlenQItem> varlen_q_items(const Varlen& s) {
  const std::vector<int> first = padded_offsets(s);
  std::vector<VarlenQItem> items;
  for (int b : longest_sequences_first(s)) {
    if (s.queries(b) == 0) continue;
    const Schedule one = sequence_schedule(s, b);
    for (int t = 0; t < q_items(one); ++t) items.push_back({q_item(one, t), {b, first[b], s.queries(b), s.keys(b)}});
  }
  return items;
}

// The key rows of sequences with keys but no queries: their dK and dV are zeros.
inline std::vector<RowRange> queryless_keys(const Varlen& s) {
  std::vector<RowRange> out;
  for (int b = 0; b < s.batch(); ++b)
    if (s.queries(b) == 0 && s.keys(b) > 0) out.push_back({s.cu_seqlens_k[b], s.keys(b)});
  return out;
}

}  // namespace attention::backward
