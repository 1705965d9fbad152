#pragma once
// What a packed batch's forward and backward (attention::VarlenForward, VarlenBackward: varlen.hpp)
// and a decode step (attention::decode::Decode: decode.hpp) are checked with: the fp32 references
// (reference.hpp) run on each sequence alone.
#include <cuda_runtime_api.h>

#include <vector>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/decode.hpp"
#include "kernels/attention/reference.hpp"

namespace tkprobe::attention_check {

// The forward's O and LSE in `t` (inputs and outputs at `layout`'s strides) against the reference on
// each sequence's rows gathered into a batch of one: the largest of each error over the sequences. A
// sequence without keys must hold O = 0 and LSE = +inf exactly, else its errors are +inf; NaN (a
// poisoned row never written) makes a figure NaN.
Errors compare_varlen_to_reference(const attention::Tensors& t, const attention::Varlen& s,
                                   const attention::VarlenLayout& layout, cudaStream_t stream);

// The backward's dQ, dK and dV in `t` (contiguous) against the reference backward on each sequence's
// rows (its Q, K, V, O, dO and LSE from `t`) gathered into a batch of one: each figure the worst over
// the sequences, non_finite summed. Where a sequence's rows attend nothing (dK and dV of a sequence
// without queries, dQ of one without keys) they must be exactly 0, else their errors are +inf. A
// sequence of one key has dQ = dK = 0 in exact arithmetic (P = 1, dS = 0), which a kernel misses by
// rounding: no relative figure, their largest |element| instead (zero_gradient_max_abs).
struct VarlenBackwardErrors : BackwardErrors {
  double zero_gradient_max_abs = 0;
};
VarlenBackwardErrors compare_varlen_backward(const attention::BackwardTensors& t, const attention::Varlen& s,
                                             cudaStream_t stream);

// A decode step's O and LSE in `t` against the reference on each sequence's queries and its cached
// keys gathered in page order through the step's block table (`lengths`: a host copy of its
// lengths; every page they reach must be in the pool): the largest of each error over the
// sequences, exact O = 0 and LSE = +inf for an empty cache. An e4m3 cache is dequantized into
// the reference's bf16: exact where its scales are powers of two (as E4m3KvCache's).
Errors compare_decode_to_reference(const attention::decode::Tensors& t, const attention::decode::Shape& s,
                                   const std::vector<int>& lengths, cudaStream_t stream);

}  // namespace tkprobe::attention_check
