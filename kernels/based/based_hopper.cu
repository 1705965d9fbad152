// Launches the Hopper Based forward (hopper/kernel.cuh): the tensor maps, one block per
// (batch, head), the shared memory it asks for.
#include <cstdint>

#include "kernels/based/hopper/kernel.cuh"
#include "kernels/based/launcher.hpp"
#include "tk/types/gl.cuh"

namespace based::detail {
namespace {

using namespace based::hopper;

template <bool Normalize>
Launch launch_for(const Maps& maps, const Problem& p, int matrices) {
  cudaFuncSetAttribute(forward_kernel<Normalize>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  return [=](cudaStream_t stream) { forward_kernel<Normalize><<<matrices, Config::threads, kSmemBytes, stream>>>(maps, p); };
}

}  // namespace

Launch hopper_forward(const Tensors& t, Shape s) {
  const std::uint64_t rows = s.seq, matrices = std::uint64_t(s.batch) * s.heads;
  const Maps maps{tma_map<Config::qk>(t.q, rows, kFeatureDim, matrices), tma_map<Config::qk>(t.k, rows, kFeatureDim, matrices),
                  tma_map<Config::v>(t.v, rows, Config::value_dim, matrices)};
  const Problem p{s.seq, (s.seq + kRows - 1) / kRows, t.o};
  return s.normalize ? launch_for<true>(maps, p, int(matrices)) : launch_for<false>(maps, p, int(matrices));
}

}  // namespace based::detail
