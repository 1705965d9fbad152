#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <utility>
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

// The errors of rows that attend no key: exact (O = 0, LSE = +inf) or infinitely wrong.
Errors keyless_errors(const DeviceBuffer<bf16>& o, const DeviceBuffer<float>& lse) {
  const std::vector<bf16> got_o = o.download();
  const std::vector<float> got_lse = lse.download();
  const bool exact = std::all_of(got_o.begin(), got_o.end(), [](bf16 x) { return float(x) == 0.0f; }) &&
                     std::all_of(got_lse.begin(), got_lse.end(), [](float x) { return x == INFINITY; });
  const double e = exact ? 0 : INFINITY;
  return {e, e, e};
}

// Sequence b's errors; a sequence without keys is exact or infinitely wrong.
Errors sequence_errors(const attention::Tensors& t, const attention::Varlen& s, const attention::VarlenLayout& l, int b,
                       cudaStream_t stream) {
  const int nq = s.queries(b), nk = s.keys(b), d = s.head_dim, first = s.cu_seqlens_q[b];
  DeviceBuffer<bf16> o(std::size_t(s.heads) * nq * d);
  DeviceBuffer<float> lse(std::size_t(s.heads) * nq);
  gather(o.get(), static_cast<const bf16*>(t.o), first, nq, s.heads, d, or_contiguous(l.o, s.heads, d), stream);
  gather(lse.get(), static_cast<const float*>(t.lse), first, nq, s.heads, 1, PackedStrides{1, s.total_q()}, stream);
  if (nk == 0) return keyless_errors(o, lse);
  const attention::Shape one{1, s.heads, s.kv_heads, nq, d, s.causal, nk};
  DeviceBuffer<bf16> q(o.size()), k(std::size_t(s.kv_heads) * nk * d), v(k.size());
  gather(q.get(), t.q, first, nq, s.heads, d, or_contiguous(l.q, s.heads, d), stream);
  gather(k.get(), t.k, s.cu_seqlens_k[b], nk, s.kv_heads, d, or_contiguous(l.k, s.kv_heads, d), stream);
  gather(v.get(), t.v, s.cu_seqlens_k[b], nk, s.kv_heads, d, or_contiguous(l.v, s.kv_heads, d), stream);
  DeviceBuffer<float> o_ref(o.size()), lse_ref(lse.size());
  reference_forward(q.get(), k.get(), v.get(), o_ref.get(), lse_ref.get(), one, stream);
  return compare_to_reference(o.get(), lse.get(), o_ref.get(), lse_ref.get(), one, stream);
}

// The worse of two errors: the larger, NaN over any number.
double worse(double a, double b) { return std::isnan(b) || b > a ? b : a; }

check::RowErrors worse(const check::RowErrors& a, const check::RowErrors& b) {
  return {worse(a.rel_error, b.rel_error), worse(a.worst_row_error, b.worst_row_error),
          worse(a.max_abs_error, b.max_abs_error), a.non_finite + b.non_finite};
}

// Rows [first, first + rows) of a contiguous packed tensor of `heads` heads, which must be exactly 0.
check::RowErrors zeros_or_infinite(const bf16* packed, int first, int rows, int heads, int head_dim,
                                   cudaStream_t stream) {
  DeviceBuffer<bf16> x(std::size_t(rows) * heads * head_dim);
  gather(x.get(), packed, first, rows, heads, head_dim, or_contiguous({}, heads, head_dim), stream);
  const std::vector<bf16> got = x.download();
  const auto finite = std::count_if(got.begin(), got.end(), [](bf16 v) { return std::isfinite(float(v)); });
  const bool zero = std::all_of(got.begin(), got.end(), [](bf16 v) { return float(v) == 0.0f; });
  const double e = zero ? 0 : INFINITY;
  return {e, e, e, got.size() - std::size_t(finite)};
}

// Sequence b's gradients against the reference on its rows alone.
BackwardErrors sequence_backward_errors(const attention::BackwardTensors& t, const attention::Varlen& s, int b,
                                        cudaStream_t stream) {
  const int nq = s.queries(b), nk = s.keys(b), d = s.head_dim, fq = s.cu_seqlens_q[b], fk = s.cu_seqlens_k[b];
  const check::RowErrors none{0, 0, 0, 0};
  if (nq == 0 || nk == 0) {
    return {nk == 0 ? zeros_or_infinite(t.dq, fq, nq, s.heads, d, stream) : none,
            nq == 0 ? zeros_or_infinite(t.dk, fk, nk, s.kv_heads, d, stream) : none,
            nq == 0 ? zeros_or_infinite(t.dv, fk, nk, s.kv_heads, d, stream) : none};
  }
  const attention::Shape one{1, s.heads, s.kv_heads, nq, d, s.causal, nk};
  const std::size_t q_size = std::size_t(s.heads) * nq * d, k_size = std::size_t(s.kv_heads) * nk * d;
  const PackedStrides q_at = or_contiguous({}, s.heads, d), k_at = or_contiguous({}, s.kv_heads, d);
  DeviceBuffer<bf16> q(q_size), k(k_size), v(k_size), o(q_size), d_o(q_size), dq(q_size), dk(k_size), dv(k_size);
  for (auto [x, packed] : {std::pair{&q, t.q}, {&o, t.o}, {&d_o, t.d_o}, {&dq, t.dq}})
    gather(x->get(), packed, fq, nq, s.heads, d, q_at, stream);
  for (auto [x, packed] : {std::pair{&k, t.k}, {&v, t.v}, {&dk, t.dk}, {&dv, t.dv}})
    gather(x->get(), packed, fk, nk, s.kv_heads, d, k_at, stream);
  DeviceBuffer<float> lse(std::size_t(s.heads) * nq), dq_ref(q_size), dk_ref(k_size), dv_ref(k_size), delta(lse.size());
  gather(lse.get(), t.lse, fq, nq, s.heads, 1, PackedStrides{1, s.total_q()}, stream);
  reference_backward(q.get(), k.get(), v.get(), o.get(), d_o.get(), lse.get(), dq_ref.get(), dk_ref.get(), dv_ref.get(),
                     delta.get(), one, stream);
  return compare_backward(dq.get(), dk.get(), dv.get(), dq_ref.get(), dk_ref.get(), dv_ref.get(), one, stream);
}

// Keys [0, keys) of one sequence's pages (`table_row`, device memory) of a cache
// [pages][page_size][kv_heads][D] as a contiguous (1, kv_heads, keys, D) bf16 tensor, an e4m3
// cache's entries times their head's scale: a thread per element.
template <class CacheT>
__global__ void gather_pages_kernel(bf16* out, const CacheT* cache, const float* scales, const int* table_row, int keys,
                                    int page_size, int kv_heads, int head_dim) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= std::size_t(kv_heads) * keys * head_dim) return;
  const int d = int(i % head_dim), key = int(i / head_dim % keys), h = int(i / head_dim / keys);
  const std::size_t row = std::size_t(table_row[key / page_size]) * page_size + key % page_size;
  const float value = float(cache[(row * kv_heads + h) * head_dim + d]);
  out[i] = __float2bfloat16(scales != nullptr ? value * scales[h] : value);
}

void gather_pages(bf16* out, const void* cache, const float* scales, const attention::decode::Shape& s,
                  const int* table_row, int keys, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const std::size_t elements = std::size_t(s.kv_heads) * keys * s.head_dim;
  const unsigned blocks = unsigned((elements + kThreads - 1) / kThreads);
  if (s.cache == attention::decode::Cache::e4m3) {
    gather_pages_kernel<<<blocks, kThreads, 0, stream>>>(out, static_cast<const __nv_fp8_e4m3*>(cache), scales,
                                                         table_row, keys, s.page_size, s.kv_heads, s.head_dim);
  } else {
    gather_pages_kernel<<<blocks, kThreads, 0, stream>>>(out, static_cast<const bf16*>(cache), nullptr, table_row, keys,
                                                         s.page_size, s.kv_heads, s.head_dim);
  }
  TK_CUDA(cudaGetLastError());
}

// Sequence b of a decode step against the reference on its queries and gathered pages alone.
Errors decode_sequence_errors(const attention::decode::Tensors& t, const attention::decode::Shape& s, int b, int keys,
                              cudaStream_t stream) {
  const int* table_row = t.block_table + std::size_t(b) * s.pages_per_seq;
  const int nq = s.q_tokens, d = s.head_dim;
  const PackedStrides q_at{std::int64_t(s.heads) * d, d};
  DeviceBuffer<bf16> q(std::size_t(s.heads) * nq * d), o(q.size());
  DeviceBuffer<float> lse(std::size_t(s.heads) * nq);
  gather(o.get(), static_cast<const bf16*>(t.o), b * nq, nq, s.heads, d, q_at, stream);
  TK_CUDA(cudaMemcpyAsync(lse.get(), t.lse + std::size_t(b) * s.heads * nq, lse.size() * sizeof(float),
                          cudaMemcpyDeviceToDevice, stream));
  if (keys == 0) return keyless_errors(o, lse);
  const attention::Shape one{1, s.heads, s.kv_heads, nq, d, s.causal, keys};
  DeviceBuffer<bf16> k(std::size_t(s.kv_heads) * keys * d), v(k.size());
  gather(q.get(), t.q, b * nq, nq, s.heads, d, q_at, stream);
  gather_pages(k.get(), t.k_cache, t.k_scale, s, table_row, keys, stream);
  gather_pages(v.get(), t.v_cache, t.v_scale, s, table_row, keys, stream);
  DeviceBuffer<float> o_ref(o.size()), lse_ref(lse.size());
  reference_forward(q.get(), k.get(), v.get(), o_ref.get(), lse_ref.get(), one, stream);
  return compare_to_reference(o.get(), lse.get(), o_ref.get(), lse_ref.get(), one, stream);
}

}  // namespace

Errors compare_decode_to_reference(const attention::decode::Tensors& t, const attention::decode::Shape& s,
                                   const std::vector<int>& lengths, cudaStream_t stream) {
  Errors worst{0, 0, 0};
  for (int b = 0; b < s.batch; ++b) {
    const int keys = attention::decode::clamped_keys(lengths[b], s);
    const Errors e = decode_sequence_errors(t, s, b, keys, stream);
    worst = {worse(worst.rel_error, e.rel_error), worse(worst.lse_error, e.lse_error),
             worse(worst.worst_row_error, e.worst_row_error)};
  }
  return worst;
}

VarlenBackwardErrors compare_varlen_backward(const attention::BackwardTensors& t, const attention::Varlen& s,
                                             cudaStream_t stream) {
  VarlenBackwardErrors worst{};
  for (int b = 0; b < s.batch(); ++b) {
    BackwardErrors e = sequence_backward_errors(t, s, b, stream);
    if (s.queries(b) > 0 && s.keys(b) == 1) {
      for (check::RowErrors* zero : {&e.dq, &e.dk}) {
        worst.zero_gradient_max_abs = worse(worst.zero_gradient_max_abs, zero->max_abs_error);
        *zero = {0, 0, 0, zero->non_finite};
      }
    }
    worst.dq = worse(worst.dq, e.dq);
    worst.dk = worse(worst.dk, e.dk);
    worst.dv = worse(worst.dv, e.dv);
  }
  return worst;
}

Errors compare_varlen_to_reference(const attention::Tensors& t, const attention::Varlen& s,
                                   const attention::VarlenLayout& layout, cudaStream_t stream) {
  Errors worst{0, 0, 0};
  for (int b = 0; b < s.batch(); ++b) {
    if (s.queries(b) == 0) continue;
    const Errors e = sequence_errors(t, s, layout, b, stream);
    worst = {worse(worst.rel_error, e.rel_error), worse(worst.lse_error, e.lse_error),
             worse(worst.worst_row_error, e.worst_row_error)};
  }
  return worst;
}

}  // namespace tkprobe::attention_check
