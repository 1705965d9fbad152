// Launches the Hopper attention backward (hopper/backward_*.cuh): the scratch's layout, the
// tensor maps (at the tensors' strides: hopper/tensor_maps.cuh), the grids, the shared memory
// each kernel asks for. On one stream: the preprocess, then either the dK/dV and dQ items, which
// both read its scratch, in one launch or two (deterministic: hopper/backward_deterministic.cuh),
// or dK/dV reducing dQ into the scratch's fp32 accumulator (zeroed by the preprocess) and its
// conversion to bf16 (reducing).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/attention/hopper/backward_deterministic.cuh"
#include "kernels/attention/hopper/backward_dq_convert.cuh"
#include "kernels/attention/hopper/backward_preprocess.cuh"
#include "kernels/attention/hopper/tensor_maps.cuh"
#include "kernels/attention/launchers.hpp"

namespace attention::detail {
namespace {

using namespace attention::hopper::backward;
using attention::hopper::tensor_map;

RowStrides row_strides(Strides at) { return {at.batch, at.head, at.seq}; }

// The scratch: the two vectors, then (reducing) the accumulator, 16-byte aligned after them
// (padded(seq) is a multiple of 128 rows).
std::size_t scratch_floats_for(Shape s, DqPath path) {
  const std::size_t vectors = scratch_floats(s.batch, s.heads, s.seq);
  return path == DqPath::reducing ? vectors + dq_accumulator_floats(s.batch, s.heads, s.seq, s.head_dim) : vectors;
}

template <int D>
Launch launch_for(const BackwardTensors& t, Shape s, const BackwardStrides& at, float* scratch, DqPath path) {
  const bool reducing = path == DqPath::reducing;
  using KC = KvConfig<D>;
  using FC = KvConfig<D, true>;
  using QC = QConfig<D>;
  const Schedule schedule{s.batch, s.heads, s.kv_heads, s.seq, mask_of(s)};
  const std::size_t vector_floats = scratch_floats(s.batch, s.heads, s.seq) / 2;
  const Problem p{schedule,
                  float(1 / std::sqrt(double(D))),
                  float(M_LOG2E / std::sqrt(double(D))),
                  scratch,
                  scratch + vector_floats,
                  reducing ? scratch + 2 * vector_floats : nullptr};
  const std::uint64_t q_matrices = std::uint64_t(s.batch) * s.heads;
  const int h = s.heads, kvh = s.kv_heads, nq = s.seq, nk = keys(s);
  // Both paths' dK/dV items take the same tiles (kv_step_queries), so one set of maps serves either.
  static_assert(std::is_same_v<typename KC::q, typename FC::q> && std::is_same_v<typename KC::kv, typename FC::kv>);
  const KvMaps kv_maps{
      tensor_map<typename KC::kv>(t.k, s, kvh, nk, at.k),   tensor_map<typename KC::kv>(t.v, s, kvh, nk, at.v),
      tensor_map<typename KC::q>(t.q, s, h, nq, at.q),      tensor_map<typename KC::q>(t.d_o, s, h, nq, at.d_o),
      tensor_map<typename KC::kv>(t.dk, s, kvh, nk, at.dk), tensor_map<typename KC::kv>(t.dv, s, kvh, nk, at.dv)};
  // Enough preprocess (and conversion) blocks to fill the GPU many times over; each strides over the rest.
  const int prep_grid = int(std::min<std::uint64_t>(q_matrices * padded(s.seq) / kPrepRowsPerBlock<D>, kPrepMaxBlocks));
  const int kv_grid = kv_items(schedule);
  const BackwardTensors in = t;
  const RowStrides o_at = row_strides(at.o), d_o_at = row_strides(at.d_o);
  const DenseRows rows{s.seq};
  const auto preprocess = [=](cudaStream_t stream) {
    preprocess_kernel<D><<<prep_grid, kPrepThreads, 0, stream>>>(in.o, o_at, in.d_o, d_o_at, in.lse, rows, p);
  };
  if (reducing) {
    cudaFuncSetAttribute(reducing_dkdv_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, kKvSmemBytes<D, true>);
    const RowStrides dq_at = row_strides(at.dq);
    const std::uint64_t float4s = dq_accumulator_floats(s.batch, s.heads, s.seq, D) / 4;
    const int convert_grid = int(std::min<std::uint64_t>((float4s + kConvertThreads - 1) / kConvertThreads, kConvertMaxBlocks));
    return [=](cudaStream_t stream) {
      preprocess(stream);
      reducing_dkdv_kernel<D><<<kv_grid, FC::threads, kKvSmemBytes<D, true>, stream>>>(kv_maps, p);
      dq_convert_kernel<D><<<convert_grid, kConvertThreads, 0, stream>>>(p, in.dq, dq_at, rows);
    };
  }
  const QMaps q_maps{
      tensor_map<typename QC::q>(t.q, s, h, nq, at.q), tensor_map<typename QC::q>(t.d_o, s, h, nq, at.d_o),
      tensor_map<typename QC::kv>(t.k, s, kvh, nk, at.k), tensor_map<typename QC::kv>(t.v, s, kvh, nk, at.v),
      tensor_map<typename QC::q>(t.dq, s, h, nq, at.dq)};
  const int q_grid = q_items(schedule);
  cudaFuncSetAttribute(deterministic_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, kDeterministicSmemBytes<D>);
  return [=](cudaStream_t stream) {
    preprocess(stream);
    deterministic_kernel<D><<<kv_grid + q_grid, KC::threads, kDeterministicSmemBytes<D>, stream>>>(kv_maps, q_maps, p);
  };
}

}  // namespace

std::size_t hopper_backward_scratch_floats(Shape s, DqPath path) { return scratch_floats_for(s, path); }

Launch hopper_backward(const BackwardTensors& t, Shape s, const BackwardStrides& at, float* scratch, DqPath path) {
  return s.head_dim == 64 ? launch_for<64>(t, s, at, scratch, path) : launch_for<128>(t, s, at, scratch, path);
}

}  // namespace attention::detail
