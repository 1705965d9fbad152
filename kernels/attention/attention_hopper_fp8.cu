// Launches the e4m3 attention forward: V^T from V (hopper/transpose_v.cuh), then the Hopper
// forward kernel (hopper/kernel.cuh) on Fp8Config (hopper/config_fp8.cuh).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/attention/hopper/config_fp8.cuh"
#include "kernels/attention/hopper/kernel.cuh"
#include "kernels/attention/hopper/tensor_maps.cuh"
#include "kernels/attention/hopper/transpose_v.cuh"
#include "kernels/attention/launchers.hpp"

namespace attention::detail {

using namespace attention::hopper;

std::size_t hopper_fp8_scratch_bytes(Shape s) {
  return std::size_t(s.batch) * s.kv_heads * Fp8Config::head_dim * vt_pitch(s.seq);
}

Launch hopper_fp8_forward(const Fp8Tensors& t, Shape s, void* scratch) {
  using C = Fp8Config;
  constexpr int D = C::head_dim;
  auto* vt = static_cast<std::uint8_t*>(scratch);
  const int pitch = vt_pitch(s.seq);
  const Strides q_at = contiguous(s.heads, s.seq, D), kv_at = contiguous(s.kv_heads, s.seq, D);
  // V^T: a [batch][kv_heads] grid of D x pitch matrices, read in tiles of D rows x 128 keys.
  const grid_map vt_map = tk::tma_map<C::v_tile>(
      reinterpret_cast<const e4m3*>(vt), std::uint64_t(D), std::uint64_t(pitch), std::uint64_t(s.kv_heads),
      std::uint64_t(s.batch), {std::uint64_t(pitch), std::uint64_t(D) * pitch, std::uint64_t(D) * pitch * s.kv_heads});
  const Maps maps{tensor_map<C::q>(t.q, s, s.heads, s.seq, q_at), tensor_map<C::kv>(t.k, s, s.kv_heads, s.seq, kv_at),
                  vt_map, tensor_map<C::o_tile>(t.o, s, s.heads, s.seq, q_at)};
  const Problem p = forward_problem<C>(s, float(M_LOG2E / std::sqrt(double(D)) * double(t.q_scale) * double(t.k_scale)),
                                       t.lse, float(double(t.v_scale) / kProbScale));
  cudaFuncSetAttribute(forward_kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<C>);
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const int grid = std::min(p.items(), sms);
  const dim3 transpose_grid(pitch / kTransposeKeys, s.batch * s.kv_heads);
  const auto* v = reinterpret_cast<const std::uint8_t*>(t.v);
  const int seq = s.seq;
  return [=](cudaStream_t stream) {
    transpose_v_kernel<D><<<transpose_grid, kTransposeThreads, 0, stream>>>(v, vt, seq);
    forward_kernel<C><<<grid, C::threads, kSmemBytes<C>, stream>>>(maps, p);
  };
}

}  // namespace attention::detail
