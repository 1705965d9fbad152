#pragma once
// What each attention kernel file gives attention.cpp: why it refuses a shape beyond the common
// rules (attention::refusal checks those first), and a launch with everything prepared.
#include <cstddef>
#include <functional>
#include <string>

#include "kernels/attention/attention.hpp"

namespace attention::detail {

using Launch = std::function<void(cudaStream_t)>;

// Every tensor's strides, checked (refusal passed), the defaults filled in, and an axis of extent
// 1 given its contiguous stride: it is never stepped over, but the TMA checks it all the same.
struct ForwardStrides {
  Strides q, k, v, o;
};
struct BackwardStrides {
  Strides q, k, v, o, d_o, dq, dk, dv;
};

std::string hopper_refusal(Shape s);  // attention_hopper.cu
Launch hopper_forward(const Tensors& t, Shape s, const ForwardStrides& strides);

// attention_hopper_varlen.cu: a packed batch's forward, its tables in device memory it owns.
struct VarlenStrides {
  PackedStrides q, k, v, o;
};
Launch hopper_varlen_forward(const Tensors& t, const Varlen& s, const VarlenStrides& strides);

// attention_hopper_varlen_backward.cu: a packed batch's backward, as hopper_backward's below.
struct VarlenBackwardStrides {
  PackedStrides q, k, v, o, d_o, dq, dk, dv;
};
std::size_t hopper_varlen_backward_scratch_floats(const Varlen& s, DqPath path);
Launch hopper_varlen_backward(const BackwardTensors& t, const Varlen& s, const VarlenBackwardStrides& strides,
                              float* scratch, DqPath path);

// attention_hopper_fp8.cu: the e4m3 forward's V^T bytes, and its two launches given them.
std::size_t hopper_fp8_scratch_bytes(Shape s);
Launch hopper_fp8_forward(const Fp8Tensors& t, Shape s, void* scratch);

// attention_hopper_backward.cu: the scratch's floats for shape s on a dQ path (deterministic or
// reducing: dq_path resolved), and the launches given it.
std::size_t hopper_backward_scratch_floats(Shape s, DqPath path);
Launch hopper_backward(const BackwardTensors& t, Shape s, const BackwardStrides& strides, float* scratch, DqPath path);

std::string portable_refusal(Shape s);  // attention_portable.cu
Launch portable_forward(const Tensors& t, Shape s);

}  // namespace attention::detail
