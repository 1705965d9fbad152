#pragma once
// What a packed batch's forward (attention::VarlenForward, varlen.hpp) is checked with: the fp32
// reference forward (reference.hpp) run on each sequence alone.
#include <cuda_runtime_api.h>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/reference.hpp"

namespace tkprobe::attention_check {

// The forward's O and LSE in `t` (inputs and outputs at `layout`'s strides) against the reference on
// each sequence's rows gathered into a batch of one: the largest of each error over the sequences. A
// sequence without keys must hold O = 0 and LSE = +inf exactly, else its errors are +inf; NaN (a
// poisoned row never written) makes a figure NaN.
Errors compare_varlen_to_reference(const attention::Tensors& t, const attention::Varlen& s,
                                   const attention::VarlenLayout& layout, cudaStream_t stream);

}  // namespace tkprobe::attention_check
