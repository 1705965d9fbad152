#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/attention/attention.hpp"
#include "kernels/attention/launchers.hpp"

namespace attention {

double flops(Shape s) {
  const double nq = s.seq, nk = keys(s);
  const double pairs = !s.causal ? nq * nk : nq <= nk ? nq * nk - nq * nq / 2 : nk * nk / 2;
  return 4.0 * s.batch * s.heads * pairs * s.head_dim;
}

double flops_backward(Shape s) { return 2.5 * flops(s); }
double flops_backward(const Varlen& s) { return 2.5 * flops(s); }

double flops(const Varlen& s) {
  double sum = 0;
  for (int b = 0; b < s.batch(); ++b) {
    if (s.queries(b) > 0 && s.keys(b) > 0) {
      sum += flops(Shape{1, s.heads, s.kv_heads, s.queries(b), s.head_dim, s.causal, s.keys(b)});
    }
  }
  return sum;
}

std::string refusal(Shape s, Kernel kernel) {
  const auto positive = [](const char* name, int v) {
    return v > 0 ? std::string() : std::string(name) + " = " + std::to_string(v) + ": give a positive number";
  };
  for (const std::string& why : {positive("batch", s.batch), positive("heads", s.heads),
                                 positive("kv heads", s.kv_heads), positive("seq", s.seq)}) {
    if (!why.empty()) return why;
  }
  if (s.seq_k < 0) return "seq k = " + std::to_string(s.seq_k) + ": give a positive number (0: as many as seq)";
  if (s.heads % s.kv_heads != 0) {
    return "heads = " + std::to_string(s.heads) + ", kv heads = " + std::to_string(s.kv_heads) +
           ": the query heads must be a multiple of the key/value heads";
  }
  if (s.head_dim != 64 && s.head_dim != 96 && s.head_dim != 128 && s.head_dim != 256) {
    return "head dim = " + std::to_string(s.head_dim) + ": give 64, 96, 128 or 256";
  }
  if (kernel == Kernel::mma_sync && s.head_dim != 64 && s.head_dim != 128) {
    return "head dim = " + std::to_string(s.head_dim) + ": the mma-sync forward takes 64 or 128";
  }
  return kernel == Kernel::wgmma ? detail::hopper_refusal(s) : detail::portable_refusal(s);
}

std::string backward_refusal(Shape s) {
  if (std::string why = refusal(s, Kernel::wgmma); !why.empty()) return why;
  if (s.head_dim != 64 && s.head_dim != 128) {
    return "head dim = " + std::to_string(s.head_dim) + ": the backward takes 64 or 128";
  }
  return "";
}

std::string refusal(Shape s, Dtype dtype) {
  if (std::string why = refusal(s, Kernel::wgmma); !why.empty() || dtype == Dtype::bf16) return why;
  if (s.head_dim != 128) return "head dim = " + std::to_string(s.head_dim) + ": the e4m3 forward takes 128";
  if (keys(s) != s.seq) {
    return "seq k = " + std::to_string(keys(s)) + ", seq = " + std::to_string(s.seq) +
           ": the e4m3 forward takes as many keys as queries";
  }
  if (std::int64_t(s.batch) * s.kv_heads > 65535) {
    return "batch x kv heads = " + std::to_string(std::int64_t(s.batch) * s.kv_heads) +
           ": the e4m3 forward takes at most 65535 (its V^T pass has a block row per key/value matrix)";
  }
  return "";
}

std::string refusal(const Fp8Tensors& t, Shape s) {
  if (std::string why = refusal(s, Dtype::e4m3); !why.empty()) return why;
  const std::pair<const char*, const void*> tensors[] = {{"q", t.q}, {"k", t.k}, {"v", t.v}, {"o", t.o}};
  for (const auto& [name, data] : tensors) {
    if (data == nullptr || reinterpret_cast<std::uintptr_t>(data) % 16 != 0) {
      return std::string(name) + ": null or not 16-byte aligned: the TMA needs a 16-byte aligned base";
    }
  }
  if (t.lse == nullptr) return "lse: give a buffer of batch x heads x seq floats";
  const std::pair<const char*, float> scales[] = {{"q_scale", t.q_scale}, {"k_scale", t.k_scale}, {"v_scale", t.v_scale}};
  for (const auto& [name, scale] : scales) {
    if (!(scale > 0) || !std::isfinite(scale)) {
      return std::string(name) + " = " + std::to_string(scale) + ": give a positive finite scale";
    }
  }
  return "";
}

std::size_t fp8_scratch_bytes(Shape s) { return detail::hopper_fp8_scratch_bytes(s); }

Strides contiguous(int heads, int seq, int head_dim) {
  const std::int64_t row = head_dim, matrix = row * seq;
  return {matrix * heads, matrix, row, 1};
}

namespace {

constexpr int kElementBytes = sizeof(__nv_bfloat16);

struct Axis {
  const char* name;
  std::int64_t stride;
  int extent;
};

// A tensor's heads and rows: queries' (Q, O and their gradients) or keys' (K, V, dK, dV).
struct Extent {
  int heads, rows;
};
Extent queries(Shape s) { return {s.heads, s.seq}; }
Extent keys_of(Shape s) { return {s.kv_heads, keys(s)}; }

// The batch, head and row axes of a tensor of extent `e`.
std::array<Axis, 3> axes(Strides at, Shape s, Extent e) {
  return {Axis{"batch", at.batch, s.batch}, Axis{"head", at.head, e.heads}, Axis{"seq", at.seq, e.rows}};
}

// `given`, or the contiguous strides; an axis of extent 1 takes its contiguous stride.
Strides resolved(const std::optional<Strides>& given, Shape s, Extent e) {
  const Strides dense = contiguous(e.heads, e.rows, s.head_dim);
  Strides at = given.value_or(dense);
  if (s.batch == 1) at.batch = dense.batch;
  if (e.heads == 1) at.head = dense.head;
  if (e.rows == 1) at.seq = dense.seq;
  return at;
}

std::string describe(Strides at) {
  return "{batch " + std::to_string(at.batch) + ", head " + std::to_string(at.head) + ", seq " +
         std::to_string(at.seq) + ", dim " + std::to_string(at.dim) + "}";
}

// Why the TMA cannot describe tensor `name` at `data` with (resolved) strides `at` ("" when it
// can): cuTensorMapEncodeTiled's rules, in the caller's terms.
std::string tma_refusal(const std::string& name, const void* data, Strides at, Shape s, Extent e) {
  if (at.dim != 1) {
    return name + ": head-dim stride " + std::to_string(at.dim) + ": the head dim must be contiguous (stride 1)";
  }
  if (reinterpret_cast<std::uintptr_t>(data) % 16 != 0) {
    return name + ": its address is not 16-byte aligned: the TMA needs a 16-byte aligned base";
  }
  constexpr std::int64_t kMaxStrideBytes = std::int64_t(1) << 40;
  for (const Axis& a : axes(at, s, e)) {
    const std::string which = name + ": " + a.name + " stride " + std::to_string(a.stride);
    if (a.stride <= 0) return which + ": give a positive stride";
    if (a.stride * kElementBytes % 16 != 0) {
      return which + " (" + std::to_string(a.stride * kElementBytes) +
             " bytes): the TMA needs strides that are multiples of 16 bytes (8 bf16 elements)";
    }
    if (a.stride >= kMaxStrideBytes / kElementBytes) return which + ": the TMA needs strides below 2^40 bytes";
  }
  return "";
}

// Whether two elements of an output would share an address: the axes, innermost first, must each
// step past everything the axes inside them span.
bool overlaps(Strides at, Shape s, Extent e) {
  std::array<Axis, 3> outer = axes(at, s, e);
  std::sort(outer.begin(), outer.end(), [](const Axis& a, const Axis& b) { return a.stride < b.stride; });
  std::int64_t span = s.head_dim;
  for (const Axis& a : outer) {
    if (a.extent == 1) continue;
    if (a.stride < span) return true;
    span = a.stride * a.extent;
  }
  return false;
}

struct Operand {
  std::string name;
  const void* data;
  Strides at;  // resolved
  Extent extent;
  bool written;
};

std::string layout_refusal(const std::vector<Operand>& operands, Shape s, Kernel kernel) {
  for (const Operand& x : operands) {
    // mma_sync reads through pointers, not the TMA: its alignment rules are the caller's (README).
    if (kernel == Kernel::mma_sync) {
      if (x.at == contiguous(x.extent.heads, x.extent.rows, s.head_dim)) continue;
      return x.name + ": strides " + describe(x.at) + ": strided inputs need the wgmma kernel; mma_sync reads " +
             "contiguous (B, H, N, D) tensors";
    }
    if (std::string why = tma_refusal(x.name, x.data, x.at, s, x.extent); !why.empty()) return why;
    if (x.written && overlaps(x.at, s, x.extent)) {
      return x.name + ": strides " + describe(x.at) + " make elements overlap: an output needs a place per element";
    }
  }
  return "";
}

detail::ForwardStrides resolved(const ForwardLayout& l, Shape s) {
  return {resolved(l.q, s, queries(s)), resolved(l.k, s, keys_of(s)), resolved(l.v, s, keys_of(s)),
          resolved(l.o, s, queries(s))};
}

detail::BackwardStrides resolved(const BackwardLayout& l, Shape s) {
  const Extent q = queries(s), k = keys_of(s);
  return {resolved(l.q, s, q),   resolved(l.k, s, k),  resolved(l.v, s, k),  resolved(l.o, s, q),
          resolved(l.d_o, s, q), resolved(l.dq, s, q), resolved(l.dk, s, k), resolved(l.dv, s, k)};
}

}  // namespace

std::string refusal(const Tensors& t, Shape s, Kernel kernel, const ForwardLayout& layout) {
  if (std::string why = refusal(s, kernel); !why.empty()) return why;
  const detail::ForwardStrides at = resolved(layout, s);
  const Extent q = queries(s), k = keys_of(s);
  return layout_refusal(
      {{"q", t.q, at.q, q, false}, {"k", t.k, at.k, k, false}, {"v", t.v, at.v, k, false}, {"o", t.o, at.o, q, true}},
      s, kernel);
}

namespace {

// A packed batch's tensors as one batch of the total rows: what the TMA's rules and the overlap
// check see (an empty side as one row, which no item reads).
Shape packed_as_one(const Varlen& s) {
  return {1, s.heads, s.kv_heads, std::max(1, s.total_q()), s.head_dim, s.causal, std::max(1, s.total_k())};
}

// `given`, or a contiguous (total, H, D) tensor's; an axis of extent 1 takes its contiguous stride.
PackedStrides resolved(const std::optional<PackedStrides>& given, int heads, int rows, int head_dim) {
  const PackedStrides dense{std::int64_t(heads) * head_dim, head_dim};
  PackedStrides at = given.value_or(dense);
  if (heads == 1) at.head = dense.head;
  if (rows == 1) at.row = dense.row;
  return at;
}

// A packed tensor's strides: of query rows (heads) or of key rows (kv heads).
PackedStrides query_rows(const std::optional<PackedStrides>& given, const Varlen& s) {
  return resolved(given, s.heads, packed_as_one(s).seq, s.head_dim);
}
PackedStrides key_rows(const std::optional<PackedStrides>& given, const Varlen& s) {
  return resolved(given, s.kv_heads, keys(packed_as_one(s)), s.head_dim);
}

detail::VarlenStrides resolved(const VarlenLayout& l, const Varlen& s) {
  return {query_rows(l.q, s), key_rows(l.k, s), key_rows(l.v, s), query_rows(l.o, s)};
}

detail::VarlenBackwardStrides resolved(const VarlenBackwardLayout& l, const Varlen& s) {
  return {query_rows(l.q, s),   key_rows(l.k, s),    key_rows(l.v, s),  query_rows(l.o, s),
          query_rows(l.d_o, s), query_rows(l.dq, s), key_rows(l.dk, s), key_rows(l.dv, s)};
}

// A packed tensor, its strides resolved: its name, base, whether it holds query rows, and written.
struct PackedOperand {
  std::string name;
  const void* data;
  PackedStrides at;
  bool query_rows, written;
};

// Why a packed batch's pass cannot take the tensors `operands()` gives (called once the offsets
// hold, as their strides' defaults read the totals): the offsets, the pass's shape rules
// (`shape_refusal`) of the batch as one, then each tensor as a batch of one of the total rows.
template <class ShapeRefusal, class Operands>
std::string packed_refusal(const Varlen& s, ShapeRefusal shape_refusal, Operands operands) {
  if (std::string why = offsets_refusal(s); !why.empty()) return why;
  const Shape one = packed_as_one(s);
  if (std::string why = shape_refusal(one); !why.empty()) return why;
  std::vector<Operand> as_one;
  for (const PackedOperand& x : operands()) {
    const Extent e = x.query_rows ? queries(one) : keys_of(one);
    as_one.push_back({x.name, x.data, {std::int64_t(e.rows) * x.at.row, x.at.head, x.at.row, 1}, e, x.written});
  }
  return layout_refusal(as_one, one, Kernel::wgmma);  // the batch stride: never stepped over
}

}  // namespace

std::string refusal(const Tensors& t, const Varlen& s, const VarlenLayout& layout) {
  const auto forward_refusal = [](Shape one) { return refusal(one, Kernel::wgmma); };
  return packed_refusal(s, forward_refusal, [&] {
    const detail::VarlenStrides at = resolved(layout, s);
    return std::vector<PackedOperand>{{"q", t.q, at.q, true, false},
                                      {"k", t.k, at.k, false, false},
                                      {"v", t.v, at.v, false, false},
                                      {"o", t.o, at.o, true, true}};
  });
}

std::string refusal(const BackwardTensors& t, const Varlen& s, const VarlenBackwardLayout& layout) {
  return packed_refusal(s, backward_refusal, [&] {
    const detail::VarlenBackwardStrides at = resolved(layout, s);
    return std::vector<PackedOperand>{{"q", t.q, at.q, true, false},       {"k", t.k, at.k, false, false},
                                      {"v", t.v, at.v, false, false},      {"o", t.o, at.o, true, false},
                                      {"d_o", t.d_o, at.d_o, true, false}, {"dq", t.dq, at.dq, true, true},
                                      {"dk", t.dk, at.dk, false, true},    {"dv", t.dv, at.dv, false, true}};
  });
}

std::string refusal(const BackwardTensors& t, Shape s, const BackwardLayout& layout) {
  if (std::string why = backward_refusal(s); !why.empty()) return why;
  const detail::BackwardStrides at = resolved(layout, s);
  const Extent q = queries(s), k = keys_of(s);
  return layout_refusal({{"q", t.q, at.q, q, false},
                         {"k", t.k, at.k, k, false},
                         {"v", t.v, at.v, k, false},
                         {"o", t.o, at.o, q, false},
                         {"d_o", t.d_o, at.d_o, q, false},
                         {"dq", t.dq, at.dq, q, true},
                         {"dk", t.dk, at.dk, k, true},
                         {"dv", t.dv, at.dv, k, true}},
                        s, Kernel::wgmma);
}

namespace {

void throw_if_refused(const char* pass, const std::string& why) {
  if (!why.empty()) throw std::invalid_argument(std::string("attention ") + pass + ": " + why);
}

detail::Launch forward_launch(const Tensors& t, Shape s, Kernel kernel, const ForwardLayout& layout) {
  throw_if_refused("forward", refusal(t, s, kernel, layout));
  return kernel == Kernel::wgmma ? detail::hopper_forward(t, s, resolved(layout, s)) : detail::portable_forward(t, s);
}

detail::Launch varlen_launch(const Tensors& t, const Varlen& s, const VarlenLayout& layout) {
  throw_if_refused("varlen forward", refusal(t, s, layout));
  return detail::hopper_varlen_forward(t, s, resolved(layout, s));
}

std::shared_ptr<void> allocate_bytes(const char* pass, std::size_t bytes) {
  void* p = nullptr;
  if (const cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess) {
    throw std::runtime_error(std::string("attention ") + pass + ": cannot allocate " + std::to_string(bytes) +
                             " bytes of scratch: " + cudaGetErrorString(e));
  }
  return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

std::shared_ptr<void> allocate_scratch(std::size_t floats) { return allocate_bytes("backward", floats * sizeof(float)); }

Shape checked_fp8(const Fp8Tensors& t, Shape s) {
  throw_if_refused("e4m3 forward", refusal(t, s));
  return s;
}

// The scratch's vectors are read with bulk copies, from 16-byte aligned addresses.
float* aligned(float* scratch) {
  if (scratch == nullptr || reinterpret_cast<std::uintptr_t>(scratch) % 16 != 0) {
    throw std::invalid_argument("attention backward: the scratch is null or not 16-byte aligned: give an aligned block");
  }
  return scratch;
}

Shape checked(const BackwardTensors& t, Shape s, const BackwardLayout& layout) {
  throw_if_refused("backward", refusal(t, s, layout));
  return s;
}

const Varlen& checked(const BackwardTensors& t, const Varlen& s, const VarlenBackwardLayout& layout) {
  throw_if_refused("varlen backward", refusal(t, s, layout));
  return s;
}

}  // namespace

Forward::Forward(const Tensors& t, Shape s, Kernel kernel, const ForwardLayout& layout)
    : launch_(forward_launch(t, s, kernel, layout)) {}

VarlenForward::VarlenForward(const Tensors& t, const Varlen& s, const VarlenLayout& layout)
    : launch_(varlen_launch(t, s, layout)) {}

Fp8Forward::Fp8Forward(const Fp8Tensors& t, Shape s)
    : scratch_(allocate_bytes("e4m3 forward", detail::hopper_fp8_scratch_bytes(checked_fp8(t, s)))),
      launch_(detail::hopper_fp8_forward(t, s, scratch_.get())) {}

Backward::Backward(const BackwardTensors& t, Shape s, const BackwardLayout& layout, BackwardOptions options)
    : Backward(t, s, layout,
               allocate_scratch(detail::hopper_backward_scratch_floats(checked(t, s, layout), dq_path(s, options))),
               options) {}

Backward::Backward(const BackwardTensors& t, Shape s, const BackwardLayout& layout, float* scratch,
                   BackwardOptions options)
    : Backward(t, s, layout, std::shared_ptr<void>(aligned(scratch), [](void*) {}), options) {}

Backward::Backward(const BackwardTensors& t, Shape s, const BackwardLayout& layout, std::shared_ptr<void> scratch,
                   BackwardOptions options)
    : scratch_(std::move(scratch)),
      launch_(detail::hopper_backward(t, checked(t, s, layout), resolved(layout, s), static_cast<float*>(scratch_.get()),
                                      dq_path(s, options))) {}

VarlenBackward::VarlenBackward(const BackwardTensors& t, const Varlen& s, const VarlenBackwardLayout& layout,
                               BackwardOptions options)
    : VarlenBackward(
          t, s, layout,
          allocate_scratch(detail::hopper_varlen_backward_scratch_floats(checked(t, s, layout), dq_path(s, options))),
          options) {}

VarlenBackward::VarlenBackward(const BackwardTensors& t, const Varlen& s, const VarlenBackwardLayout& layout,
                               float* scratch, BackwardOptions options)
    : VarlenBackward(t, s, layout, std::shared_ptr<void>(aligned(scratch), [](void*) {}), options) {}

VarlenBackward::VarlenBackward(const BackwardTensors& t, const Varlen& s, const VarlenBackwardLayout& layout,
                               std::shared_ptr<void> scratch, BackwardOptions options)
    : scratch_(std::move(scratch)),
      launch_(detail::hopper_varlen_backward(t, checked(t, s, layout), resolved(layout, s),
                                             static_cast<float*>(scratch_.get()), dq_path(s, options))) {}

DqPath dq_path(Shape, BackwardOptions options) {
  return options.dq == DqPath::fastest ? DqPath::reducing : options.dq;
}

// The dense rule for the batch's heads and head dim; it reads no lengths, so bad offsets cannot reach it.
DqPath dq_path(const Varlen& s, BackwardOptions options) {
  return dq_path(Shape{1, s.heads, s.kv_heads, 1, s.head_dim, s.causal}, options);
}

std::size_t backward_scratch_bytes(Shape s, BackwardOptions options) {
  return detail::hopper_backward_scratch_floats(s, dq_path(s, options)) * sizeof(float);
}

std::size_t backward_scratch_bytes(const Varlen& s, BackwardOptions options) {
  return detail::hopper_varlen_backward_scratch_floats(s, dq_path(s, options)) * sizeof(float);
}

}  // namespace attention
