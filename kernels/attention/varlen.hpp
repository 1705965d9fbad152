#pragma once
// Packed batches of sequences of different lengths (FlashAttention's varlen): Q and O are (total_q,
// heads, D), K and V (total_k, kv_heads, D), sequence b's queries rows [cu_q[b], cu_q[b + 1]) and
// its keys rows [cu_k[b], cu_k[b + 1]); LSE is float [heads][total_q]. Each sequence is attended as
// a batch of one of shape (1, heads, kv_heads, its queries, D, causal, its keys), mask.hpp's mask
// included; a sequence with no keys gives O = 0 and LSE = +inf (its rows attend none), one with no
// queries nothing.
//
// The offsets are host data: the Hopper forward gives every sequence tensor maps of its own
// (their edges are the sequence's, so the TMA zero-fills past its keys and drops what overhangs its
// queries) and runs the items of a table made here, once, before any launch. A sequence without
// keys has no items: a fill writes its rows.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/attention/mask.hpp"
#include "kernels/attention/work_order.hpp"

namespace attention {

struct Varlen {
  std::vector<int> cu_seqlens_q, cu_seqlens_k;  // B + 1 offsets each: 0, then each sequence's end
  int heads, kv_heads, head_dim;
  bool causal;

  int batch() const { return int(cu_seqlens_q.size()) - 1; }
  int queries(int b) const { return cu_seqlens_q[b + 1] - cu_seqlens_q[b]; }
  int keys(int b) const { return cu_seqlens_k[b + 1] - cu_seqlens_k[b]; }
  int total_q() const { return cu_seqlens_q.back(); }
  int total_k() const { return cu_seqlens_k.back(); }
  Mask mask(int b) const { return {keys(b), keys(b) - queries(b), causal}; }
};

// The offsets of sequences of these lengths: 0, then each one's end (cu_seqlens).
inline std::vector<int> offsets_of(const std::vector<int>& lengths) {
  std::vector<int> out{0};
  for (int n : lengths) out.push_back(out.back() + n);
  return out;
}

// Why `offsets` (named `name`) are no batch's offsets ("" when they are): B + 1 >= 2 entries from
// 0, none decreasing.
inline std::string offsets_refusal(const char* name, const std::vector<int>& offsets) {
  const std::string n = name;
  if (offsets.size() < 2)
    return n + ": " + std::to_string(offsets.size()) + " offsets: give B + 1 >= 2 (0, then each sequence's end)";
  if (offsets[0] != 0) return n + "[0] = " + std::to_string(offsets[0]) + ": the first offset must be 0";
  for (std::size_t b = 1; b < offsets.size(); ++b) {
    if (offsets[b] < offsets[b - 1]) {
      return n + "[" + std::to_string(b) + "] = " + std::to_string(offsets[b]) + " < " + n + "[" +
             std::to_string(b - 1) + "] = " + std::to_string(offsets[b - 1]) + ": offsets must not decrease";
    }
  }
  return "";
}

// Why `s` describes no packed batch ("" when it does): both offset lists, and as many of them.
inline std::string offsets_refusal(const Varlen& s) {
  if (std::string why = offsets_refusal("cu_seqlens_q", s.cu_seqlens_q); !why.empty()) return why;
  if (std::string why = offsets_refusal("cu_seqlens_k", s.cu_seqlens_k); !why.empty()) return why;
  if (s.cu_seqlens_q.size() != s.cu_seqlens_k.size()) {
    return "cu_seqlens_q has " + std::to_string(s.cu_seqlens_q.size()) + " offsets, cu_seqlens_k " +
           std::to_string(s.cu_seqlens_k.size()) + ": give B + 1 of each";
  }
  return "";
}

// One work item of the varlen forward, as its kernel reads it: `consumers` 64-row tiles from
// q_tile (< 0: a causal first block's padding) of head `head` of sequence `seq`, and the key tiles
// it reads; first_row is the sequence's first row of the packed Q (its LSE's place).
struct VarlenItem {
  int seq, head, q_tile, tiles, first_row, queries, keys;
};

constexpr int kVarlenTileRows = 64;  // a consumer's query rows (a wgmma's M)

// Every item of `s` for a forward of `consumers` 64-row tiles per item and `key_tile` keys per key
// tile, a sequence's heads one after another, each head's blocks of rows in order. As the dense
// forward (hopper/config.cuh's item): causal blocks padded at the sequence's start, each reading the
// key tiles its last row attends (at least one; a sequence without keys has none).
inline std::vector<VarlenItem> items_by_head(const Varlen& s, int consumers, int key_tile) {
  const int block_rows = consumers * kVarlenTileRows;
  std::vector<VarlenItem> items;
  for (int b = 0; b < s.batch(); ++b) {
    const int n = s.queries(b);
    const Mask m = s.mask(b);
    if (m.keys == 0) continue;
    const int blocks = (n + block_rows - 1) / block_rows;
    const int lead = s.causal ? padding_tiles(n, block_rows, kVarlenTileRows) : 0;
    for (int h = 0; h < s.heads; ++h) {
      for (int q_block = 0; q_block < blocks; ++q_block) {
        const int q_tile = q_block * consumers - lead;
        const int key_end = m.key_end(std::min(n, (q_tile + consumers) * kVarlenTileRows));
        const int tiles = std::max(1, (key_end + key_tile - 1) / key_tile);
        items.push_back({b, h, q_tile, tiles, s.cu_seqlens_q[b], n, m.keys});
      }
    }
  }
  return items;
}

// Items [first, last) longest first, snaking over waves of `grid` (work_order.hpp's snake_rank).
inline void longest_first(std::vector<VarlenItem>& items, std::size_t first, std::size_t last, int grid) {
  std::vector<VarlenItem> part(items.begin() + first, items.begin() + last);
  std::stable_sort(part.begin(), part.end(),
                   [](const VarlenItem& a, const VarlenItem& b) { return a.tiles > b.tiles; });
  const int count = int(part.size());
  for (int p = 0; p < count; ++p) items[first + p] = part[snake_rank(p, grid, count)];
}

// One past the last item of the chunk from `first`: whole heads (runs of items_by_head's of one
// sequence's one head) while they fit two waves of `grid`, at least one.
inline std::size_t chunk_end(const std::vector<VarlenItem>& items, std::size_t first, int grid) {
  std::size_t last = first;
  while (last < items.size()) {
    std::size_t head_end = last;
    while (head_end < items.size() && items[head_end].seq == items[last].seq &&
           items[head_end].head == items[last].head)
      ++head_end;
    if (last > first && head_end - first > std::size_t(2 * grid)) break;
    last = head_end;
  }
  return last;
}

// items_by_head's items put in the order a grid of `grid` blocks takes them (block b: items b,
// b + grid, ...). Without a mask as they are, so the blocks in flight share a head's K and V; with
// one longest first, so the blocks finish together: across the batch, or (`chunks`, the dense
// forward's causal_chunks) a chunk of whole heads of about two waves at a time, each chunk's heads
// read from DRAM once.
inline void order_for_grid(std::vector<VarlenItem>& items, bool causal, int grid, bool chunks) {
  if (!causal) return;
  for (std::size_t first = 0, last; first < items.size(); first = last) {
    last = chunks ? chunk_end(items, first, grid) : items.size();
    longest_first(items, first, last, grid);
  }
}

// The items of `s` in the order a grid of `grid` blocks takes them.
inline std::vector<VarlenItem> varlen_items(const Varlen& s, int consumers, int key_tile, int grid, bool chunks) {
  std::vector<VarlenItem> items = items_by_head(s, consumers, key_tile);
  order_for_grid(items, s.causal, grid, chunks);
  return items;
}

// Whether the forward of `s` on `grid` blocks takes chunks of heads (varlen_items): as the dense
// forward decides (hopper/config.cuh's causal_chunks: at D = 128, as many heads as blocks or more).
inline bool varlen_chunks(const Varlen& s, int head_dim, int grid) {
  int matrices = 0;
  for (int b = 0; b < s.batch(); ++b) matrices += s.queries(b) > 0 && s.keys(b) > 0 ? s.heads : 0;
  return head_dim == 128 && matrices >= grid;
}

// The rows of the sequences that have queries but no keys, which the forward fills.
struct RowRange {
  int first, count;
};
inline std::vector<RowRange> keyless_rows(const Varlen& s) {
  std::vector<RowRange> out;
  for (int b = 0; b < s.batch(); ++b)
    if (s.queries(b) > 0 && s.keys(b) == 0) out.push_back({s.cu_seqlens_q[b], s.queries(b)});
  return out;
}

}  // namespace attention
