// Launches the Hopper attention forward (hopper/kernel.cuh) on a packed batch (varlen.hpp): each
// sequence's tensor maps and the work items, made here once and copied to device memory that the
// launch owns (hopper/varlen_tables.cuh).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/attention/hopper/kernel.cuh"
#include "kernels/attention/hopper/varlen_tables.cuh"
#include "kernels/attention/launchers.hpp"

namespace attention::detail {
namespace {

using namespace attention::hopper;

// The rows of sequences without keys (keyless_rows): they attend none, so O = 0 and LSE = +inf
// (mask.hpp's rule), a block per sequence.
__global__ void fill_keyless(bf16* o, float* lse, const RowRange* sequences, int heads, int head_dim, PackedStrides at,
                             int total_q) {
  const RowRange r = sequences[blockIdx.x];
  zero_rows(o, r, heads, head_dim, at);
  for (std::int64_t i = threadIdx.x; i < std::int64_t(r.count) * heads; i += blockDim.x) {
    lse[std::size_t(i / r.count) * total_q + r.first + i % r.count] = INFINITY;
  }
}
constexpr int kFillThreads = 256;

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
  std::vector<VarlenItem> items = items_by_head(s, C::consumers, C::block_kv);
  const int grid = std::min(sms, int(items.size()));
  order_for_grid(items, s.causal, grid, varlen_chunks(s, D, grid));
  const std::vector<RowRange> keyless = keyless_rows(s);
  if (items.empty() && keyless.empty()) return [](cudaStream_t) {};  // no sequence has a query

  const int batch = s.batch();
  DeviceTables tables;
  const std::size_t maps_offset = tables.add(sequence_maps<C>(t, s, at)), items_offset = tables.add(items),
                    keyless_offset = tables.add(keyless);
  std::shared_ptr<std::byte> memory = tables.upload("attention varlen forward");
  const auto* maps = reinterpret_cast<const grid_map*>(memory.get() + maps_offset);
  const VarlenMaps vm{maps, maps + batch, maps + 2 * batch, maps + 3 * batch,
                      reinterpret_cast<const VarlenItem*>(memory.get() + items_offset)};
  const auto* keyless_at = reinterpret_cast<const RowRange*>(memory.get() + keyless_offset);
  const Problem p = varlen_problem(s, int(items.size()), float(M_LOG2E / std::sqrt(double(D))), t.lse);
  cudaFuncSetAttribute(forward_kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<C>);
  const int keyless_count = int(keyless.size());
  const int heads = s.heads, total_q = s.total_q();
  bf16* const o = t.o;
  const PackedStrides o_at = at.o;
  // The launch holds the tables for as long as it lives.
  return [=, memory = std::move(memory)](cudaStream_t stream) {
    if (grid > 0) forward_kernel<C><<<grid, C::threads, kSmemBytes<C>, stream>>>(vm, p);
    if (keyless_count > 0)
      fill_keyless<<<keyless_count, kFillThreads, 0, stream>>>(o, p.lse, keyless_at, heads, D, o_at, total_q);
  };
}

}  // namespace

Launch hopper_varlen_forward(const Tensors& t, const Varlen& s, const VarlenStrides& at) {
  switch (s.head_dim) {
    case 64:
      return launch_for<64>(t, s, at);
    case 96:
      return launch_for<96>(t, s, at);
    case 128:
      return launch_for<128>(t, s, at);
    default:
      return launch_for<256>(t, s, at);
  }
}

}  // namespace attention::detail
