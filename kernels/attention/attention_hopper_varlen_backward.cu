// Launches the Hopper attention backward (hopper/backward_*.cuh) on a packed batch
// (varlen_backward.hpp): each sequence's tensor maps and the dK/dV and dQ items, made here once
// and copied to device memory that the launch owns (hopper/varlen_tables.cuh); the kernels are the
// dense ones, reading a sequence's tiles through its maps and its scratch rows from its first
// padded row. Sequences with keys but no queries get dK = dV = 0 from a fill.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "kernels/attention/hopper/backward_deterministic.cuh"
#include "kernels/attention/hopper/backward_dq_convert.cuh"
#include "kernels/attention/hopper/backward_preprocess.cuh"
#include "kernels/attention/hopper/varlen_tables.cuh"
#include "kernels/attention/launchers.hpp"

namespace attention::detail {
namespace {

using namespace attention::hopper;
using namespace attention::hopper::backward;

// dK and dV of the sequences with keys but no queries (queryless_keys), a block per sequence.
__global__ void zero_queryless(bf16* dk, bf16* dv, const RowRange* sequences, int kv_heads, int head_dim,
                               PackedStrides dk_at, PackedStrides dv_at) {
  const RowRange r = sequences[blockIdx.x];
  zero_rows(dk, r, kv_heads, head_dim, dk_at);
  zero_rows(dv, r, kv_heads, head_dim, dv_at);
}
constexpr int kFillThreads = 256;

// A packed tensor's map per sequence, rows [offsets[b], offsets[b + 1]), tiles ST. An empty
// sequence's map is never read, but a dQ item of no key tile still takes its matrix (matrix_of):
// its grid's `inner` count is set.
template <class ST>
std::vector<grid_map> per_sequence(const bf16* data, const std::vector<int>& offsets, int heads, int head_dim,
                                   PackedStrides at) {
  std::vector<grid_map> maps;
  for (std::size_t b = 0; b + 1 < offsets.size(); ++b) {
    const int rows = offsets[b + 1] - offsets[b];
    grid_map empty{};
    empty.inner = heads;
    maps.push_back(rows > 0 ? sequence_map<ST>(data, offsets[b], rows, heads, head_dim, at) : empty);
  }
  return maps;
}

RowStrides row_strides(PackedStrides at) { return {0, at.head, at.row}; }  // a batch of one

// The device tables: each map array, then the items; the pointers into them once uploaded.
template <int D>
struct Tables {
  using KC = KvConfig<D>;
  using QC = QConfig<D>;
  std::shared_ptr<std::byte> memory;
  VarlenKvMaps kv;
  VarlenQMaps q;
  int q_count;
  const RowBlock* blocks;
  const RowRange* queryless;

  Tables(const BackwardTensors& t, const Varlen& s, const VarlenBackwardStrides& at, bool staggered) {
    const std::vector<int>&cq = s.cu_seqlens_q, &ck = s.cu_seqlens_k;
    const int h = s.heads, kvh = s.kv_heads;
    const std::vector<VarlenKvItem> kv_items = varlen_kv_items(s, KC::step, staggered);
    const std::vector<VarlenQItem> q_items = staggered ? std::vector<VarlenQItem>{} : varlen_q_items(s);
    DeviceTables tables;
    const std::size_t maps[] = {tables.add(per_sequence<typename KC::kv>(t.k, ck, kvh, D, at.k)),
                                tables.add(per_sequence<typename KC::kv>(t.v, ck, kvh, D, at.v)),
                                tables.add(per_sequence<typename KC::q>(t.q, cq, h, D, at.q)),
                                tables.add(per_sequence<typename KC::q>(t.d_o, cq, h, D, at.d_o)),
                                tables.add(per_sequence<typename KC::kv>(t.dk, ck, kvh, D, at.dk)),
                                tables.add(per_sequence<typename KC::kv>(t.dv, ck, kvh, D, at.dv)),
                                tables.add(per_sequence<typename QC::q>(t.q, cq, h, D, at.q)),
                                tables.add(per_sequence<typename QC::q>(t.d_o, cq, h, D, at.d_o)),
                                tables.add(per_sequence<typename QC::kv>(t.k, ck, kvh, D, at.k)),
                                tables.add(per_sequence<typename QC::kv>(t.v, ck, kvh, D, at.v)),
                                tables.add(per_sequence<typename QC::q>(t.dq, cq, h, D, at.dq))};
    const std::size_t kv_at = tables.add(kv_items), q_at = tables.add(q_items);
    const std::size_t blocks_at = tables.add(row_blocks(s)), queryless_at = tables.add(queryless_keys(s));
    memory = tables.upload("attention varlen backward");
    const auto map = [&](int i) { return reinterpret_cast<const grid_map*>(memory.get() + maps[i]); };
    kv = {map(0),
          map(1),
          map(2),
          map(3),
          map(4),
          map(5),
          reinterpret_cast<const VarlenKvItem*>(memory.get() + kv_at),
          int(kv_items.size())};
    q = {map(6), map(7), map(8), map(9), map(10), reinterpret_cast<const VarlenQItem*>(memory.get() + q_at)};
    q_count = int(q_items.size());
    blocks = reinterpret_cast<const RowBlock*>(memory.get() + blocks_at);
    queryless = reinterpret_cast<const RowRange*>(memory.get() + queryless_at);
  }
};

template <int D>
Launch launch_for(const BackwardTensors& t, const Varlen& s, const VarlenBackwardStrides& at, float* scratch,
                  DqPath path) {
  const bool reducing = path == DqPath::reducing;
  using KC = KvConfig<D>;
  using FC = KvConfig<D, true>;
  static_assert(std::is_same_v<typename KC::q, typename FC::q> && std::is_same_v<typename KC::kv, typename FC::kv>,
                "one set of maps serves either path's dK/dV items");
  const Tables<D> tables(t, s, at, reducing);
  const int padded_rows = padded_offsets(s).back();
  const std::size_t vector_floats = scratch_floats(1, s.heads, padded_rows) / 2;
  const Problem p{varlen_schedule(s),
                  float(1 / std::sqrt(double(D))),
                  float(M_LOG2E / std::sqrt(double(D))),
                  scratch,
                  scratch + vector_floats,
                  reducing ? scratch + 2 * vector_floats : nullptr};
  const PackedRows rows{tables.blocks, padded_rows, s.total_q()};
  const int prep_grid = int(std::min<std::uint64_t>(vector_floats / kPrepRowsPerBlock<D>, kPrepMaxBlocks));
  const int kv_grid = tables.kv.count, q_grid = tables.q_count;
  const int queryless = int(queryless_keys(s).size());
  const BackwardTensors in = t;
  const int kv_heads = s.kv_heads;
  const VarlenBackwardStrides strides = at;
  // The tail every path ends with; the launch holds the tables for as long as it lives.
  const auto zero_dkdv = [=](cudaStream_t stream) {
    if (queryless > 0)
      zero_queryless<<<queryless, kFillThreads, 0, stream>>>(in.dk, in.dv, tables.queryless, kv_heads, D, strides.dk,
                                                             strides.dv);
  };
  const auto preprocess = [=](cudaStream_t stream) {
    preprocess_kernel<D, PackedRows><<<prep_grid, kPrepThreads, 0, stream>>>(in.o, row_strides(strides.o), in.d_o,
                                                                             row_strides(strides.d_o), in.lse, rows, p);
  };
  if (padded_rows == 0) return zero_dkdv;  // no sequence has a query
  if (reducing) {
    cudaFuncSetAttribute(reducing_dkdv_kernel<D, VarlenKvMaps>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         kKvSmemBytes<D, true>);
    const std::uint64_t float4s = dq_accumulator_floats(1, s.heads, padded_rows, D) / 4;
    const int convert_grid =
        int(std::min<std::uint64_t>((float4s + kConvertThreads - 1) / kConvertThreads, kConvertMaxBlocks));
    return [=](cudaStream_t stream) {
      preprocess(stream);
      if (kv_grid > 0)
        reducing_dkdv_kernel<D, VarlenKvMaps><<<kv_grid, FC::threads, kKvSmemBytes<D, true>, stream>>>(tables.kv, p);
      dq_convert_kernel<D, PackedRows>
          <<<convert_grid, kConvertThreads, 0, stream>>>(p, in.dq, row_strides(strides.dq), rows);
      zero_dkdv(stream);
    };
  }
  cudaFuncSetAttribute(deterministic_kernel<D, VarlenKvMaps, VarlenQMaps>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       kDeterministicSmemBytes<D>);
  return [=](cudaStream_t stream) {
    preprocess(stream);
    deterministic_kernel<D, VarlenKvMaps, VarlenQMaps>
        <<<kv_grid + q_grid, KC::threads, kDeterministicSmemBytes<D>, stream>>>(tables.kv, tables.q, p);
    zero_dkdv(stream);
  };
}

}  // namespace

std::size_t hopper_varlen_backward_scratch_floats(const Varlen& s, DqPath path) {
  const int rows = padded_offsets(s).back();
  const std::size_t vectors = scratch_floats(1, s.heads, rows);
  return path == DqPath::reducing ? vectors + dq_accumulator_floats(1, s.heads, rows, s.head_dim) : vectors;
}

Launch hopper_varlen_backward(const BackwardTensors& t, const Varlen& s, const VarlenBackwardStrides& at,
                              float* scratch, DqPath path) {
  return s.head_dim == 64 ? launch_for<64>(t, s, at, scratch, path) : launch_for<128>(t, s, at, scratch, path);
}

}  // namespace attention::detail
