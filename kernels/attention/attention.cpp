#include <stdexcept>
#include <string>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/launchers.hpp"

namespace attention {

double flops(Shape s) {
  const double full = 4.0 * s.batch * s.heads * double(s.seq) * s.seq * s.head_dim;
  return s.causal ? full / 2 : full;
}

double flops_backward(Shape s) { return 2.5 * flops(s); }

std::string refusal(Shape s, Kernel kernel) {
  const auto positive = [](const char* name, int v) {
    return v > 0 ? std::string() : std::string(name) + " = " + std::to_string(v) + ": give a positive number";
  };
  for (const std::string& why : {positive("batch", s.batch), positive("heads", s.heads),
                                 positive("kv heads", s.kv_heads), positive("seq", s.seq)}) {
    if (!why.empty()) return why;
  }
  if (s.heads % s.kv_heads != 0) {
    return "heads = " + std::to_string(s.heads) + ", kv heads = " + std::to_string(s.kv_heads) +
           ": the query heads must be a multiple of the key/value heads";
  }
  if (s.head_dim != 64 && s.head_dim != 128) {
    return "head dim = " + std::to_string(s.head_dim) + ": give 64 or 128";
  }
  return kernel == Kernel::wgmma ? detail::hopper_refusal(s) : detail::portable_refusal(s);
}

Forward::Forward(const Tensors& t, Shape s, Kernel kernel)
    : launch_(kernel == Kernel::wgmma ? detail::hopper_forward(t, s) : detail::portable_forward(t, s)) {}

namespace {

std::shared_ptr<void> allocate_scratch(std::size_t floats) {
  void* p = nullptr;
  if (const cudaError_t e = cudaMalloc(&p, floats * sizeof(float)); e != cudaSuccess) {
    throw std::runtime_error("attention backward: cannot allocate " + std::to_string(floats * sizeof(float)) +
                             " bytes of scratch: " + cudaGetErrorString(e));
  }
  return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

Shape checked(Shape s) {
  if (const std::string why = refusal(s, Kernel::wgmma); !why.empty()) {
    throw std::invalid_argument("attention backward: " + why);
  }
  return s;
}

}  // namespace

Backward::Backward(const BackwardTensors& t, Shape s)
    : scratch_(allocate_scratch(detail::hopper_backward_scratch_floats(checked(s)))),
      launch_(detail::hopper_backward(t, s, static_cast<float*>(scratch_.get()))) {}

}  // namespace attention
