#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention/reference_varlen.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"

namespace tkprobe::attention_check {
namespace {

using attention::PackedStrides;
using bf16 = __nv_bfloat16;

// Rows [first, first + rows) of `heads` heads of a packed tensor at `at` as a contiguous (1, heads,
// rows, width) tensor `out`.
template <class T>
void gather(T* out, const T* packed, int first, int rows, int heads, int width, PackedStrides at, cudaStream_t stream) {
  for (int h = 0; h < heads; ++h) {
    TK_CUDA(cudaMemcpy2DAsync(out + std::size_t(h) * rows * width, width * sizeof(T),
                              packed + first * at.row + h * at.head, at.row * sizeof(T), width * sizeof(T), rows,
                              cudaMemcpyDeviceToDevice, stream));
  }
}

PackedStrides or_contiguous(const std::optional<PackedStrides>& given, int heads, int head_dim) {
  return given.value_or(PackedStrides{std::int64_t(heads) * head_dim, head_dim});
}

// Sequence b's errors; a sequence without keys is exact or infinitely wrong.
Errors sequence_errors(const attention::Tensors& t, const attention::Varlen& s, const attention::VarlenLayout& l, int b,
                       cudaStream_t stream) {
  const int nq = s.queries(b), nk = s.keys(b), d = s.head_dim, first = s.cu_seqlens_q[b];
  DeviceBuffer<bf16> o(std::size_t(s.heads) * nq * d);
  DeviceBuffer<float> lse(std::size_t(s.heads) * nq);
  gather(o.get(), static_cast<const bf16*>(t.o), first, nq, s.heads, d, or_contiguous(l.o, s.heads, d), stream);
  gather(lse.get(), static_cast<const float*>(t.lse), first, nq, s.heads, 1, PackedStrides{1, s.total_q()}, stream);
  if (nk == 0) {
    const std::vector<bf16> got_o = o.download();
    const std::vector<float> got_lse = lse.download();
    const bool exact = std::all_of(got_o.begin(), got_o.end(), [](bf16 x) { return float(x) == 0.0f; }) &&
                       std::all_of(got_lse.begin(), got_lse.end(), [](float x) { return x == INFINITY; });
    const double e = exact ? 0 : INFINITY;
    return {e, e, e};
  }
  const attention::Shape one{1, s.heads, s.kv_heads, nq, d, s.causal, nk};
  DeviceBuffer<bf16> q(o.size()), k(std::size_t(s.kv_heads) * nk * d), v(k.size());
  gather(q.get(), t.q, first, nq, s.heads, d, or_contiguous(l.q, s.heads, d), stream);
  gather(k.get(), t.k, s.cu_seqlens_k[b], nk, s.kv_heads, d, or_contiguous(l.k, s.kv_heads, d), stream);
  gather(v.get(), t.v, s.cu_seqlens_k[b], nk, s.kv_heads, d, or_contiguous(l.v, s.kv_heads, d), stream);
  DeviceBuffer<float> o_ref(o.size()), lse_ref(lse.size());
  reference_forward(q.get(), k.get(), v.get(), o_ref.get(), lse_ref.get(), one, stream);
  return compare_to_reference(o.get(), lse.get(), o_ref.get(), lse_ref.get(), one, stream);
}

}  // namespace

Errors compare_varlen_to_reference(const attention::Tensors& t, const attention::Varlen& s,
                                   const attention::VarlenLayout& layout, cudaStream_t stream) {
  Errors worst{0, 0, 0};
  const auto worse = [](double a, double b) { return std::isnan(b) || b > a ? b : a; };
  for (int b = 0; b < s.batch(); ++b) {
    if (s.queries(b) == 0) continue;
    const Errors e = sequence_errors(t, s, layout, b, stream);
    worst = {worse(worst.rel_error, e.rel_error), worse(worst.lse_error, e.lse_error),
             worse(worst.worst_row_error, e.worst_row_error)};
  }
  return worst;
}

}  // namespace tkprobe::attention_check
