// Launches the Hopper attention forward (hopper/kernel.cuh) on a packed batch (varlen.hpp): each
// sequence's tensor maps and the work items, made here once and copied to device memory that the
// launch owns.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/attention/hopper/kernel.cuh"
#include "kernels/attention/launchers.hpp"

namespace attention::detail {
namespace {

using namespace attention::hopper;

constexpr std::size_t kAlign = 256;
constexpr std::size_t aligned_up(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Rows [first, first + rows) of a packed tensor at `at` as a grid of one batch of `heads` matrices of
// rows x D: the TMA's edges are the sequence's.
template <class ST>
grid_map sequence_map(const bf16* data, std::int64_t first, int rows, int heads, int head_dim, PackedStrides at) {
  const auto row = std::uint64_t(at.row);
  return tk::tma_map<ST>(data + first * at.row, std::uint64_t(rows), std::uint64_t(head_dim), std::uint64_t(heads), 1,
                         {row, std::uint64_t(at.head), row * std::uint64_t(rows)});  // the batch stride: never stepped
}

// The rows of sequences without keys (keyless_rows): they attend none, so O = 0 and LSE = +inf
// (mask.hpp's rule), a block per sequence.
__global__ void fill_keyless(bf16* o, float* lse, const RowRange* sequences, int heads, int head_dim, PackedStrides at,
                             int total_q) {
  const RowRange r = sequences[blockIdx.x];
  const std::int64_t row_elements = std::int64_t(heads) * head_dim;
  for (std::int64_t i = threadIdx.x; i < r.count * row_elements; i += blockDim.x) {
    const std::int64_t row = r.first + i / row_elements, head = i % row_elements / head_dim, d = i % head_dim;
    o[row * at.row + head * at.head + d] = __float2bfloat16(0.0f);
  }
  for (std::int64_t i = threadIdx.x; i < std::int64_t(r.count) * heads; i += blockDim.x) {
    lse[std::size_t(i / r.count) * total_q + r.first + i % r.count] = INFINITY;
  }
}
constexpr int kFillThreads = 256;

// The device tables, one allocation: Q, K, V and O maps per sequence, the items, the keyless rows.
struct Layout {
  std::size_t maps, items, keyless, total;
  Layout(int sequences, std::size_t item_count, std::size_t keyless_count)
      : maps(aligned_up(4 * std::size_t(sequences) * sizeof(grid_map))),
        items(aligned_up(item_count * sizeof(VarlenItem))),
        keyless(aligned_up(keyless_count * sizeof(RowRange))),
        total(maps + items + keyless) {}
};

// The tables in device memory, copied there once: a failure names what could not be done.
std::shared_ptr<std::byte> upload(const Layout& layout, const std::vector<grid_map>& maps,
                                  const std::vector<VarlenItem>& items, const std::vector<RowRange>& keyless) {
  std::vector<std::byte> host(layout.total);
  std::memcpy(host.data(), maps.data(), maps.size() * sizeof(grid_map));
  std::memcpy(host.data() + layout.maps, items.data(), items.size() * sizeof(VarlenItem));
  std::memcpy(host.data() + layout.maps + layout.items, keyless.data(), keyless.size() * sizeof(RowRange));
  void* p = nullptr;
  if (const cudaError_t e = cudaMalloc(&p, layout.total); e != cudaSuccess) {
    throw std::runtime_error("attention varlen forward: cannot allocate " + std::to_string(layout.total) +
                             " bytes for its tables: " + cudaGetErrorString(e));
  }
  std::shared_ptr<std::byte> device(static_cast<std::byte*>(p), [](std::byte* q) { cudaFree(q); });
  if (const cudaError_t e = cudaMemcpy(p, host.data(), layout.total, cudaMemcpyHostToDevice); e != cudaSuccess) {
    throw std::runtime_error(std::string("attention varlen forward: copying its tables: ") + cudaGetErrorString(e));
  }
  return device;
}

// Each sequence's Q, K, V and O maps, [Q...][K...][V...][O...]; none for a sequence no item reads.
template <class C>
std::vector<grid_map> sequence_maps(const Tensors& t, const Varlen& s, const VarlenStrides& at) {
  constexpr int D = C::head_dim;
  const int batch = s.batch();
  std::vector<grid_map> maps(4 * std::size_t(batch));
  for (int b = 0; b < batch; ++b) {
    const int nq = s.queries(b), nk = s.keys(b);
    if (nq == 0 || nk == 0) continue;
    maps[b] = sequence_map<typename C::q>(t.q, s.cu_seqlens_q[b], nq, s.heads, D, at.q);
    maps[batch + b] = sequence_map<typename C::kv>(t.k, s.cu_seqlens_k[b], nk, s.kv_heads, D, at.k);
    maps[2 * batch + b] = sequence_map<typename C::kv>(t.v, s.cu_seqlens_k[b], nk, s.kv_heads, D, at.v);
    maps[3 * batch + b] = sequence_map<typename C::q>(t.o, s.cu_seqlens_q[b], nq, s.heads, D, at.o);
  }
  return maps;
}

template <int D>
Launch launch_for(const Tensors& t, const Varlen& s, const VarlenStrides& at) {
  using C = Config<D, true, true>;
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  std::vector<VarlenItem> items = items_by_head(s, C::consumers, kBlockKV);
  const int grid = std::min(sms, int(items.size()));
  order_for_grid(items, s.causal, grid, varlen_chunks(s, D, grid));
  const std::vector<RowRange> keyless = keyless_rows(s);
  if (items.empty() && keyless.empty()) return [](cudaStream_t) {};  // no sequence has a query

  const int batch = s.batch();
  const Layout layout(batch, items.size(), keyless.size());
  std::shared_ptr<std::byte> tables = upload(layout, sequence_maps<C>(t, s, at), items, keyless);
  const auto* maps = reinterpret_cast<const grid_map*>(tables.get());
  const VarlenMaps vm{maps, maps + batch, maps + 2 * batch, maps + 3 * batch,
                      reinterpret_cast<const VarlenItem*>(tables.get() + layout.maps)};
  const auto* keyless_at = reinterpret_cast<const RowRange*>(tables.get() + layout.maps + layout.items);
  const Problem p = varlen_problem(s, int(items.size()), float(M_LOG2E / std::sqrt(double(D))), t.lse);
  cudaFuncSetAttribute(forward_kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<C>);
  const int keyless_count = int(keyless.size());
  const int heads = s.heads, total_q = s.total_q();
  bf16* const o = t.o;
  const PackedStrides o_at = at.o;
  // The launch holds the tables for as long as it lives.
  return [=, tables = std::move(tables)](cudaStream_t stream) {
    if (grid > 0) forward_kernel<C><<<grid, C::threads, kSmemBytes<C>, stream>>>(vm, p);
    if (keyless_count > 0)
      fill_keyless<<<keyless_count, kFillThreads, 0, stream>>>(o, p.lse, keyless_at, heads, D, o_at, total_q);
  };
}

}  // namespace

Launch hopper_varlen_forward(const Tensors& t, const Varlen& s, const VarlenStrides& at) {
  return s.head_dim == 64 ? launch_for<64>(t, s, at) : launch_for<128>(t, s, at);
}

}  // namespace attention::detail
