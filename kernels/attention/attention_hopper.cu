// Launches the Hopper attention forward (hopper/kernel.cuh): the tensor maps (at the tensors'
// strides: hopper/tensor_maps.cuh), the persistent grid, the shared memory it asks for.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/attention/hopper/kernel.cuh"
#include "kernels/attention/hopper/tensor_maps.cuh"
#include "kernels/attention/launchers.hpp"

namespace attention::detail {
namespace {

using namespace attention::hopper;

template <int D, bool Shifted>
Launch launch_for(const Tensors& t, Shape s, const ForwardStrides& at) {
  using C = Config<D, Shifted>;
  const int nk = keys(s);
  const Maps maps{tensor_map<typename C::q>(t.q, s, s.heads, s.seq, at.q),
                  tensor_map<typename C::kv>(t.k, s, s.kv_heads, nk, at.k),
                  tensor_map<typename C::kv>(t.v, s, s.kv_heads, nk, at.v),
                  tensor_map<typename C::q>(t.o, s, s.heads, s.seq, at.o)};
  const Problem p = forward_problem<C>(s, float(M_LOG2E / std::sqrt(double(D))), t.lse, 1.0f);
  cudaFuncSetAttribute(forward_kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<C>);
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const int grid = std::min(p.items(), sms);
  return [=](cudaStream_t stream) { forward_kernel<C><<<grid, C::threads, kSmemBytes<C>, stream>>>(maps, p); };
}

}  // namespace

std::string hopper_refusal(Shape s) {
  if (std::int64_t(s.batch) * s.heads * ((s.seq + 63) / 64) > INT32_MAX) return "batch x heads x seq is too large";
  return "";
}

Launch hopper_forward(const Tensors& t, Shape s, const ForwardStrides& at) {
  const bool shifted = keys(s) != s.seq;  // Config's Shifted
  if (s.head_dim == 64) return shifted ? launch_for<64, true>(t, s, at) : launch_for<64, false>(t, s, at);
  if (s.head_dim == 96) return shifted ? launch_for<96, true>(t, s, at) : launch_for<96, false>(t, s, at);
  if (s.head_dim == 128) return shifted ? launch_for<128, true>(t, s, at) : launch_for<128, false>(t, s, at);
  return shifted ? launch_for<256, true>(t, s, at) : launch_for<256, false>(t, s, at);
}

}  // namespace attention::detail
