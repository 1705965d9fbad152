#include "probes/overlap/overlap_kernels.hpp"

#include <utility>

#include "probes/timed_kernels/wgmma_kernels.cuh"

namespace tkprobe::overlap {
namespace {

using tensor::Filler;

template <Filler F, std::size_t... I>
const void* pick(int count, std::index_sequence<I...>) {
  const void* kernel = nullptr;
  ((count == kCounts[I]
        ? (kernel = reinterpret_cast<const void*>(
               &tensor::wgmma_kernel<tk::arch::bf16_f32, kWgmmaN, tensor::ASource::smem, F, kCounts[I]>))
        : nullptr),
   ...);
  return kernel;
}

}  // namespace

const void* filler_kernel(Filler filler, int count) {
  constexpr auto counts = std::make_index_sequence<std::size(kCounts)>{};
  switch (filler) {
    case Filler::fma:
      return pick<Filler::fma>(count, counts);
    case Filler::ex2:
      return pick<Filler::ex2>(count, counts);
    default:
      return nullptr;
  }
}

}  // namespace tkprobe::overlap
