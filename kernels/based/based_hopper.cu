// Launches the Hopper Based forward (hopper/kernel.cuh): the tensor maps, one block per
// (batch, head), the shared memory it asks for.
#include <cstdint>

#include "kernels/based/hopper/kernel.cuh"
#include "kernels/based/launcher.hpp"
#include "tk/types/gl.cuh"

namespace based::detail {
namespace {

using namespace based::hopper;

template <int Dv, bool Normalize>
Launch launch_for(const Tensors& t, Shape s) {
  using C = Config<Dv>;
  const std::uint64_t rows = s.seq, matrices = std::uint64_t(s.batch) * s.heads;
  const Maps maps{tma_map<QkTile>(t.q, rows, kFeatureDim, matrices), tma_map<QkTile>(t.k, rows, kFeatureDim, matrices),
                  tma_map<typename C::v>(t.v, rows, Dv, matrices)};
  const Problem p{s.seq, (s.seq + kRows - 1) / kRows, t.o};
  const auto kernel = forward_kernel<Dv, Normalize>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<Dv>);
  return [=](cudaStream_t stream) { kernel<<<int(matrices), C::threads, kSmemBytes<Dv>, stream>>>(maps, p); };
}

template <int Dv>
Launch launch_for(const Tensors& t, Shape s) {
  return s.normalize ? launch_for<Dv, true>(t, s) : launch_for<Dv, false>(t, s);
}

}  // namespace

Launch hopper_forward(const Tensors& t, Shape s) {
  return s.value_dim == 64 ? launch_for<64>(t, s) : launch_for<128>(t, s);
}

}  // namespace based::detail
