// A C interface to the attention passes, so that Python (ctypes) can call the same kernels
// tkprobe times: scripts/compare_sdpa.py times them beside PyTorch's SDPA backends in one process,
// on the same tensors, and the tk_attention package (python/) wraps them as a drop-in for PyTorch's
// scaled_dot_product_attention. A pass is prepared once (tensor maps, launch attributes, the
// backward's scratch) and then launched, so a timed launch holds no host-side setup. Every create
// returns null when the shape or a tensor's layout is refused, or preparing failed, with the
// reason on stderr.
//
// Strides: `strides` is null (every tensor contiguous (B, H, N, D)) or points at four int64 per
// tensor, {batch, head, seq, dim} in elements as torch.Tensor.stride() gives them, tensor after
// tensor in the order of the pointer arguments (forward: q, k, v, o; backward: q, k, v, o, d_o,
// dq, dk, dv). LSE is always contiguous float [batch][heads][seq].
//
// seq_k: keys per sequence where the entry takes it (0: as many as seq, the queries); K, V, dK
// and dV have seq_k rows. With a causal mask query i attends keys up to i + seq_k - seq (the
// bottom-right corner: kernels/attention/mask.hpp).
//
// Packed batches (tk_attention_varlen_*: kernels/attention/varlen.hpp): Q, O (total_q, heads, D),
// K, V (total_k, kv_heads, D), LSE float [heads][total_q]; cu_seqlens_q and cu_seqlens_k are host
// arrays of batch + 1 int32 offsets; `strides` null (contiguous) or {row, head} in elements per
// tensor, q, k, v, o (backward: q, k, v, o, d_o, dq, dk, dv).
//
// The e4m3 forward (tk_attention_fp8_*: attention.hpp's Fp8Forward, sm_90a, D = 128): Q, K, V e4m3
// contiguous (B, H, N, D) (K and V with kv_heads), each with one float scale (a stored value x
// stands for x scale); O bf16 contiguous, LSE as the bf16 forward's.
//
// Decode (tk_attention_decode_*: kernels/attention/decode.hpp): Q, O [batch][q_tokens][heads][D],
// K and V caches [pages][page_size][kv_heads][D], all contiguous; block_table [batch][pages_per_seq]
// and lengths [batch] int32 device arrays; LSE float [batch][heads][q_tokens]; max_keys bounds every
// length (0: the table's capacity) and sizes the split of the keys. cache_dtype 0: bf16 caches;
// 1: e4m3 caches with k_scale and v_scale, float device arrays of kv_heads entries (a key is its
// entry x k_scale[its kv head]; null for bf16).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/decode.hpp"

namespace {

using bf16 = __nv_bfloat16;

attention::Strides strides_at(const std::int64_t* strides, int tensor) {
  const std::int64_t* s = strides + 4 * tensor;
  return {s[0], s[1], s[2], s[3]};
}

attention::ForwardLayout forward_layout(const std::int64_t* strides) {
  if (strides == nullptr) return {};
  return {strides_at(strides, 0), strides_at(strides, 1), strides_at(strides, 2), strides_at(strides, 3)};
}

attention::BackwardLayout backward_layout(const std::int64_t* strides) {
  if (strides == nullptr) return {};
  return {strides_at(strides, 0), strides_at(strides, 1), strides_at(strides, 2), strides_at(strides, 3),
          strides_at(strides, 4), strides_at(strides, 5), strides_at(strides, 6), strides_at(strides, 7)};
}

attention::PackedStrides packed_at(const std::int64_t* strides, int tensor) {
  return {strides[2 * tensor], strides[2 * tensor + 1]};
}

attention::VarlenLayout varlen_layout(const std::int64_t* strides) {
  if (strides == nullptr) return {};
  return {packed_at(strides, 0), packed_at(strides, 1), packed_at(strides, 2), packed_at(strides, 3)};
}

attention::VarlenBackwardLayout varlen_backward_layout(const std::int64_t* strides) {
  if (strides == nullptr) return {};
  return {packed_at(strides, 0), packed_at(strides, 1), packed_at(strides, 2), packed_at(strides, 3),
          packed_at(strides, 4), packed_at(strides, 5), packed_at(strides, 6), packed_at(strides, 7)};
}

// The batch's offsets from the host arrays (empty where null or batch < 1: refused as too few).
std::vector<int> offsets(const int* cu_seqlens, int batch) {
  if (cu_seqlens == nullptr || batch < 1) return {};
  return std::vector<int>(cu_seqlens, cu_seqlens + batch + 1);
}

// The decode's shape from the C arguments, and why it is refused ("" when it is not): cache_dtype
// 0 is bf16, 1 e4m3.
attention::decode::Shape decode_shape(int batch, int q_tokens, int heads, int kv_heads, int head_dim, int page_size,
                                      int pages_per_seq, int pages, int causal, int max_keys, int cache_dtype) {
  using attention::decode::Cache;
  return {batch,
          q_tokens,
          heads,
          kv_heads,
          head_dim,
          page_size,
          pages_per_seq,
          pages,
          causal != 0,
          max_keys,
          cache_dtype == 1 ? Cache::e4m3 : Cache::bf16};
}
std::string decode_refusal(attention::decode::Shape s, int cache_dtype) {
  if (cache_dtype != 0 && cache_dtype != 1)
    return "cache_dtype " + std::to_string(cache_dtype) + ": give 0 (bf16) or 1 (e4m3)";
  return attention::decode::refusal(s);
}

// `make()`'s pass, or null with `refused` or the exception's message on stderr.
template <class Make>
void* create_or_explain(const char* entry, const std::string& refused, Make make) {
  if (!refused.empty()) {
    std::fprintf(stderr, "%s: %s\n", entry, refused.c_str());
    return nullptr;
  }
  try {
    return make();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", entry, e.what());
    return nullptr;
  }
}

// The backward's dQ path as an int (attention::DqPath): 0 the faster for the shape (the default),
// 1 deterministic (the same bits every run), 2 reducing (dQ reduced in fp32 by the dK/dV kernel;
// its scratch is larger). Anything else is refused, with the reason on stderr.
bool dq_options(int dq_path, attention::BackwardOptions& options) {
  if (dq_path < 0 || dq_path > 2) {
    std::fprintf(stderr, "tk_attention: dq_path %d: give 0 (fastest), 1 (deterministic) or 2 (reducing)\n", dq_path);
    return false;
  }
  options.dq = static_cast<attention::DqPath>(dq_path);
  return true;
}

}  // namespace

extern "C" {

// A prepared forward pass (kernel 0: wgmma, 1: mma_sync; the latter takes contiguous tensors
// only). Free it with tk_attention_destroy.
void* tk_attention_create_strided(const void* q, const void* k, const void* v, void* o, float* lse, int batch,
                                  int heads, int kv_heads, int seq, int seq_k, int head_dim, int causal, int kernel,
                                  const std::int64_t* strides) {
  const attention::Shape s{batch, heads, kv_heads, seq, head_dim, causal != 0, seq_k};
  const auto which = kernel == 0 ? attention::Kernel::wgmma : attention::Kernel::mma_sync;
  const attention::Tensors t{static_cast<const bf16*>(q), static_cast<const bf16*>(k), static_cast<const bf16*>(v),
                             static_cast<bf16*>(o), lse};
  const attention::ForwardLayout layout = forward_layout(strides);
  return create_or_explain("tk_attention_create", attention::refusal(t, s, which, layout),
                           [&] { return new attention::Forward(t, s, which, layout); });
}

// The same for contiguous tensors, as many keys as queries.
void* tk_attention_create(const void* q, const void* k, const void* v, void* o, float* lse, int batch, int heads,
                          int kv_heads, int seq, int head_dim, int causal, int kernel) {
  return tk_attention_create_strided(q, k, v, o, lse, batch, heads, kv_heads, seq, 0, head_dim, causal, kernel,
                                     nullptr);
}

// Launches it on `stream`: 0 on success, 1 on a CUDA error.
int tk_attention_launch(void* forward, void* stream) {
  (*static_cast<attention::Forward*>(forward))(static_cast<cudaStream_t>(stream));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

void tk_attention_destroy(void* forward) { delete static_cast<attention::Forward*>(forward); }

// A prepared e4m3 forward (its V^T scratch allocated). Free it with tk_attention_fp8_destroy.
void* tk_attention_fp8_create(const void* q, const void* k, const void* v, float q_scale, float k_scale, float v_scale,
                              void* o, float* lse, int batch, int heads, int kv_heads, int seq, int head_dim,
                              int causal) {
  using e4m3 = __nv_fp8_e4m3;
  const attention::Shape s{batch, heads, kv_heads, seq, head_dim, causal != 0};
  const attention::Fp8Tensors t{static_cast<const e4m3*>(q),
                                static_cast<const e4m3*>(k),
                                static_cast<const e4m3*>(v),
                                q_scale,
                                k_scale,
                                v_scale,
                                static_cast<bf16*>(o),
                                lse};
  return create_or_explain("tk_attention_fp8_create", attention::refusal(t, s),
                           [&] { return new attention::Fp8Forward(t, s); });
}

// Launches it on `stream` (V^T, then the forward): 0 on success, 1 on a CUDA error.
int tk_attention_fp8_launch(void* forward, void* stream) {
  (*static_cast<attention::Fp8Forward*>(forward))(static_cast<cudaStream_t>(stream));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

void tk_attention_fp8_destroy(void* forward) { delete static_cast<attention::Fp8Forward*>(forward); }

// A prepared forward of a packed batch (the wgmma kernel, sm_90a). Free it with
// tk_attention_varlen_destroy.
void* tk_attention_varlen_create(const void* q, const void* k, const void* v, void* o, float* lse,
                                 const int* cu_seqlens_q, const int* cu_seqlens_k, int batch, int heads, int kv_heads,
                                 int head_dim, int causal, const std::int64_t* strides) {
  const attention::Varlen s{
      offsets(cu_seqlens_q, batch), offsets(cu_seqlens_k, batch), heads, kv_heads, head_dim, causal != 0};
  const attention::Tensors t{static_cast<const bf16*>(q), static_cast<const bf16*>(k), static_cast<const bf16*>(v),
                             static_cast<bf16*>(o), lse};
  const attention::VarlenLayout layout = varlen_layout(strides);
  return create_or_explain("tk_attention_varlen_create", attention::refusal(t, s, layout),
                           [&] { return new attention::VarlenForward(t, s, layout); });
}

// Launches it on `stream`: 0 on success, 1 on a CUDA error.
int tk_attention_varlen_launch(void* forward, void* stream) {
  (*static_cast<attention::VarlenForward*>(forward))(static_cast<cudaStream_t>(stream));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

void tk_attention_varlen_destroy(void* forward) { delete static_cast<attention::VarlenForward*>(forward); }

// The device scratch a packed batch's backward takes on `dq_path` (0 when the batch or path is
// refused), and a prepared one, as tk_attention_backward_create_opts: `scratch` null (its own) or
// that many bytes, 16-byte aligned. Free it with tk_attention_varlen_backward_destroy.
long long tk_attention_varlen_backward_scratch_bytes(const int* cu_seqlens_q, const int* cu_seqlens_k, int batch,
                                                     int heads, int kv_heads, int head_dim, int causal, int dq_path) {
  const attention::Varlen s{
      offsets(cu_seqlens_q, batch), offsets(cu_seqlens_k, batch), heads, kv_heads, head_dim, causal != 0};
  attention::BackwardOptions options;
  const attention::Shape one{1, heads, kv_heads, 1, head_dim, causal != 0};
  return dq_options(dq_path, options) && attention::offsets_refusal(s).empty() &&
                 attention::backward_refusal(one).empty()
             ? (long long)attention::backward_scratch_bytes(s, options)
             : 0;
}
void* tk_attention_varlen_backward_create(const void* q, const void* k, const void* v, const void* o, const void* d_o,
                                          const float* lse, void* dq, void* dk, void* dv, const int* cu_seqlens_q,
                                          const int* cu_seqlens_k, int batch, int heads, int kv_heads, int head_dim,
                                          int causal, const std::int64_t* strides, void* scratch, int dq_path) {
  const attention::Varlen s{
      offsets(cu_seqlens_q, batch), offsets(cu_seqlens_k, batch), heads, kv_heads, head_dim, causal != 0};
  attention::BackwardOptions options;
  if (!dq_options(dq_path, options)) return nullptr;
  const attention::BackwardTensors t{
      static_cast<const bf16*>(q), static_cast<const bf16*>(k),   static_cast<const bf16*>(v),
      static_cast<const bf16*>(o), static_cast<const bf16*>(d_o), lse,
      static_cast<bf16*>(dq),      static_cast<bf16*>(dk),        static_cast<bf16*>(dv)};
  const attention::VarlenBackwardLayout layout = varlen_backward_layout(strides);
  return create_or_explain("tk_attention_varlen_backward_create", attention::refusal(t, s, layout), [&] {
    return scratch ? new attention::VarlenBackward(t, s, layout, static_cast<float*>(scratch), options)
                   : new attention::VarlenBackward(t, s, layout, options);
  });
}

int tk_attention_varlen_backward_launch(void* backward, void* stream) {
  (*static_cast<attention::VarlenBackward*>(backward))(static_cast<cudaStream_t>(stream));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

void tk_attention_varlen_backward_destroy(void* backward) { delete static_cast<attention::VarlenBackward*>(backward); }

// The path a backward of this shape takes on `dq_path` (1 or 2: `fastest` resolved), 0 when
// refused.
int tk_attention_backward_dq_path(int batch, int heads, int kv_heads, int seq, int seq_k, int head_dim, int causal,
                                  int dq_path) {
  const attention::Shape s{batch, heads, kv_heads, seq, head_dim, causal != 0, seq_k};
  attention::BackwardOptions options;
  if (!dq_options(dq_path, options) || !attention::backward_refusal(s).empty()) return 0;
  return static_cast<int>(attention::dq_path(s, options));
}

// The device scratch a backward of this shape takes (0 when the shape is refused); _opts: on
// `dq_path` (above; the plain one on the default, 0).
long long tk_attention_backward_scratch_bytes_opts(int batch, int heads, int kv_heads, int seq, int seq_k, int head_dim,
                                                   int causal, int dq_path) {
  const attention::Shape s{batch, heads, kv_heads, seq, head_dim, causal != 0, seq_k};
  attention::BackwardOptions options;
  return dq_options(dq_path, options) && attention::backward_refusal(s).empty()
             ? (long long)attention::backward_scratch_bytes(s, options)
             : 0;
}
long long tk_attention_backward_scratch_bytes(int batch, int heads, int kv_heads, int seq, int head_dim, int causal) {
  return tk_attention_backward_scratch_bytes_opts(batch, heads, kv_heads, seq, 0, head_dim, causal, 0);
}

// A prepared backward pass (the wgmma kernels, sm_90a): dq, dk, dv from q, k, v, the forward's o
// and lse, and d_o. `scratch` is null (the pass allocates its own on the current device, freed by
// tk_attention_backward_destroy) or tk_attention_backward_scratch_bytes of 16-byte aligned device
// memory that outlives its launches. _opts: on `dq_path` (as the scratch's size above; a lent
// scratch must be the size for the same dq_path).
void* tk_attention_backward_create_opts(const void* q, const void* k, const void* v, const void* o, const void* d_o,
                                        const float* lse, void* dq, void* dk, void* dv, int batch, int heads,
                                        int kv_heads, int seq, int seq_k, int head_dim, int causal,
                                        const std::int64_t* strides, void* scratch, int dq_path) {
  const attention::Shape s{batch, heads, kv_heads, seq, head_dim, causal != 0, seq_k};
  attention::BackwardOptions options;
  if (!dq_options(dq_path, options)) return nullptr;
  const attention::BackwardTensors t{static_cast<const bf16*>(q), static_cast<const bf16*>(k),
                                     static_cast<const bf16*>(v), static_cast<const bf16*>(o),
                                     static_cast<const bf16*>(d_o), lse, static_cast<bf16*>(dq),
                                     static_cast<bf16*>(dk), static_cast<bf16*>(dv)};
  const attention::BackwardLayout layout = backward_layout(strides);
  return create_or_explain("tk_attention_backward_create", attention::refusal(t, s, layout),
                           [&] {
                             return scratch ? new attention::Backward(t, s, layout, static_cast<float*>(scratch), options)
                                            : new attention::Backward(t, s, layout, options);
                           });
}
void* tk_attention_backward_create(const void* q, const void* k, const void* v, const void* o, const void* d_o,
                                   const float* lse, void* dq, void* dk, void* dv, int batch, int heads, int kv_heads,
                                   int seq, int head_dim, int causal, const std::int64_t* strides, void* scratch) {
  return tk_attention_backward_create_opts(q, k, v, o, d_o, lse, dq, dk, dv, batch, heads, kv_heads, seq, 0, head_dim,
                                           causal, strides, scratch, 0);
}

// Launches it on `stream` (two kernels, three on the reducing path): 0 on success, 1 on a CUDA error.
int tk_attention_backward_launch(void* backward, void* stream) {
  (*static_cast<attention::Backward*>(backward))(static_cast<cudaStream_t>(stream));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

// Frees it, and its own scratch if it has one (cudaFree waits for the device, so a launch in
// flight finishes first).
void tk_attention_backward_destroy(void* backward) { delete static_cast<attention::Backward*>(backward); }

// The splits a decode step takes on the current GPU (`splits` > 0: that many, at most 64), 0 when
// the shape is refused; the scratch those take (bytes, 0 for one split).
int tk_attention_decode_splits(int batch, int q_tokens, int heads, int kv_heads, int head_dim, int page_size,
                               int pages_per_seq, int pages, int causal, int max_keys, int cache_dtype, int splits) {
  const attention::decode::Shape s = decode_shape(batch, q_tokens, heads, kv_heads, head_dim, page_size, pages_per_seq,
                                                  pages, causal, max_keys, cache_dtype);
  if (!decode_refusal(s, cache_dtype).empty()) return 0;
  return splits > 0 ? std::min(splits, attention::decode::kMaxSplits) : attention::decode::splits_here(s);
}
long long tk_attention_decode_scratch_bytes(int batch, int q_tokens, int heads, int kv_heads, int head_dim,
                                            int splits) {
  const attention::decode::Shape s{batch, q_tokens, heads, kv_heads, head_dim, 1, 1, 1, false, 0};
  return (long long)attention::decode::scratch_bytes(s, splits);
}

// A prepared decode step on `splits` splits (from tk_attention_decode_splits) and `scratch` (null:
// its own; else tk_attention_decode_scratch_bytes of 16-byte aligned device memory that outlives
// its launches). Free it with tk_attention_decode_destroy.
void* tk_attention_decode_create(const void* q, const void* k_cache, const void* v_cache, const float* k_scale,
                                 const float* v_scale, const int* block_table, const int* lengths, void* o, float* lse,
                                 int batch, int q_tokens, int heads, int kv_heads, int head_dim, int page_size,
                                 int pages_per_seq, int pages, int causal, int max_keys, int cache_dtype, int splits,
                                 void* scratch) {
  const attention::decode::Shape s = decode_shape(batch, q_tokens, heads, kv_heads, head_dim, page_size, pages_per_seq,
                                                  pages, causal, max_keys, cache_dtype);
  const attention::decode::Tensors t{static_cast<const bf16*>(q), k_cache, v_cache, block_table, lengths,
                                     static_cast<bf16*>(o),       lse,     k_scale, v_scale};
  return create_or_explain("tk_attention_decode_create", decode_refusal(s, cache_dtype),
                           [&] { return new attention::decode::Decode(t, s, splits, static_cast<float*>(scratch)); });
}

int tk_attention_decode_launch(void* step, void* stream) {
  (*static_cast<attention::decode::Decode*>(step))(static_cast<cudaStream_t>(stream));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

void tk_attention_decode_destroy(void* step) { delete static_cast<attention::decode::Decode*>(step); }

}  // extern "C"
