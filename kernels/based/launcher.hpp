#pragma once
// What the kernel file (based_hopper.cu) gives based.cpp: a launch with everything prepared.
#include <functional>

#include "kernels/based/based.hpp"

namespace based::detail {

using Launch = std::function<void(cudaStream_t)>;

Launch hopper_forward(const Tensors& t, Shape s);  // based_hopper.cu; s passed refusal()

}  // namespace based::detail
