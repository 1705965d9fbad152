#include <stdexcept>
#include <type_traits>

#include "src/errors.hpp"
#include "tests/gpu/dsl_warp_kernels.hpp"
#include "tk/warp.cuh"

namespace tkprobe::test_kernels::dsl {
namespace {

namespace warp = tk::warp;

// ---- Registers <-> fragment-order floats (layout-blind: the test's own path in and out) ----

template <class X>
__device__ void load_fragments(X& x, const float* in) {
  const int lane = threadIdx.x;
#pragma unroll
  for (int k = 0; k < X::pairs; ++k) {
    const int at = (lane * X::pairs + k) * 2;
    x.data[k] = warp::detail::from_float2<typename X::pair>({in[at], in[at + 1]});
  }
}

template <class X>
__device__ void store_fragments(const X& x, float* out) {
  const int lane = threadIdx.x;
#pragma unroll
  for (int k = 0; k < X::pairs; ++k) {
    const float2 v = warp::detail::to_float2(x.data[k]);
    const int at = (lane * X::pairs + k) * 2;
    out[at] = v.x, out[at + 1] = v.y;
  }
}

// ---- Kernels, one per operation family; the operation is a kernel argument ----

template <class X>
__global__ void init_kernel(Init op, float value, float* out) {
  X d;
  switch (op) {
    case Init::zero:
      warp::zero(d);
      break;
    case Init::fill:
      warp::fill(d, value);
      break;
    case Init::neg_inf:
      warp::neg_inf(d);
      break;
  }
  store_fragments(d, out);
}

template <class D, class S>
__global__ void unary_kernel(Unary op, const float* in, float* out) {
  S s;
  D d;
  load_fragments(s, in);
  if constexpr (std::is_same_v<D, S>) {
    switch (op) {
      case Unary::exp:
        warp::exp(d, s);
        break;
      case Unary::exp2:
        warp::exp2(d, s);
        break;
      case Unary::abs:
        warp::abs(d, s);
        break;
      case Unary::copy:
        warp::copy(d, s);
        break;
      case Unary::log:
        warp::log(d, s);
        break;
      case Unary::log2:
        warp::log2(d, s);
        break;
    }
  } else {
    warp::copy(d, s);
  }
  store_fragments(d, out);
}

template <class X, class B>
__device__ void binary(Binary op, X& d, const X& a, const B& b) {
  switch (op) {
    case Binary::add:
      warp::add(d, a, b);
      break;
    case Binary::sub:
      warp::sub(d, a, b);
      break;
    case Binary::mul:
      warp::mul(d, a, b);
      break;
    case Binary::div:
      warp::div(d, a, b);
      break;
    case Binary::max:
      warp::max(d, a, b);
      break;
    case Binary::min:
      warp::min(d, a, b);
      break;
  }
}

template <class X>
__global__ void binary_kernel(Binary op, const float* a_in, const float* b_in, float scalar, float* out) {
  X a, d;
  load_fragments(a, a_in);
  if (b_in != nullptr) {
    X b;
    load_fragments(b, b_in);
    binary(op, d, a, b);
  } else {
    binary(op, d, a, scalar);
  }
  store_fragments(d, out);
}

template <class V, class RT, class F>
__device__ void reduce_into(const RT& s, const float* prev, float* out, F reduce) {
  V v;
  if (prev != nullptr) load_fragments(v, prev);
  reduce(v, s, prev != nullptr);
  store_fragments(v, out);
}

template <class RT>
__global__ void reduce_kernel(Reduce op, const float* in, const float* prev, float* out) {
  using Row = typename RT::row_vec;
  using Col = typename RT::col_vec;
  RT s;
  load_fragments(s, in);
  switch (op) {
    case Reduce::row_max:
      return reduce_into<Row>(s, prev, out, [](Row& v, const RT& t, bool acc) {
        acc ? warp::row_max(v, t, v) : warp::row_max(v, t);
      });
    case Reduce::row_sum:
      return reduce_into<Row>(s, prev, out, [](Row& v, const RT& t, bool acc) {
        acc ? warp::row_sum(v, t, v) : warp::row_sum(v, t);
      });
    case Reduce::row_sum_parts:
      return reduce_into<Row>(s, prev, out, [](Row& v, const RT& t, bool acc) {
        Row parts;
        warp::zero(parts);
        warp::row_sum_part(parts, t, parts);
        warp::sum_row_parts(parts);
        acc ? warp::add(v, v, parts) : warp::copy(v, parts);
      });
    case Reduce::col_max:
      return reduce_into<Col>(s, prev, out, [](Col& v, const RT& t, bool acc) {
        acc ? warp::col_max(v, t, v) : warp::col_max(v, t);
      });
    case Reduce::col_sum:
      return reduce_into<Col>(s, prev, out, [](Col& v, const RT& t, bool acc) {
        acc ? warp::col_sum(v, t, v) : warp::col_sum(v, t);
      });
  }
}

template <class RT>
__global__ void broadcast_kernel(Broadcast op, const float* in, const float* vec, float* out) {
  RT s, d;
  typename RT::row_vec r;
  typename RT::col_vec c;
  load_fragments(s, in);
  if (op <= Broadcast::div_row) {
    load_fragments(r, vec);
  } else {
    load_fragments(c, vec);
  }
  switch (op) {
    case Broadcast::add_row:
      warp::add_row(d, s, r);
      break;
    case Broadcast::sub_row:
      warp::sub_row(d, s, r);
      break;
    case Broadcast::mul_row:
      warp::mul_row(d, s, r);
      break;
    case Broadcast::div_row:
      warp::div_row(d, s, r);
      break;
    case Broadcast::add_col:
      warp::add_col(d, s, c);
      break;
    case Broadcast::sub_col:
      warp::sub_col(d, s, c);
      break;
    case Broadcast::mul_col:
      warp::mul_col(d, s, c);
      break;
    case Broadcast::div_col:
      warp::div_col(d, s, c);
      break;
  }
  store_fragments(d, out);
}

template <class RT>
__global__ void exp2_row_kernel(float scale, const float* in, const float* vec, float* out) {
  if constexpr (std::is_same_v<typename RT::element, float>) {  // what exp2_row takes
    RT s, d;
    typename RT::row_vec r;
    load_fragments(s, in);
    load_fragments(r, vec);
    warp::exp2_row(d, s, scale, r);
    store_fragments(d, out);
  }
}

template <class RT>
__global__ void exp2_col_kernel(float scale, const float* in, const float* vec, float* out) {
  if constexpr (std::is_same_v<typename RT::element, float>) {  // what exp2_col takes
    RT s, d;
    typename RT::col_vec c;
    load_fragments(s, in);
    load_fragments(c, vec);
    warp::exp2_col(d, s, scale, c);
    store_fragments(d, out);
  }
}

template <class RT>
__global__ void online_softmax_kernel(float scale, const float* first, const float* second, float* s, float* m,
                                      float* l, float* rescale) {
  if constexpr (std::is_same_v<typename RT::element, float> && RT::row_major) {  // what online_softmax takes
    RT a, b;
    typename RT::row_vec max, sum, factor;
    load_fragments(a, first);
    load_fragments(b, second);
    warp::neg_inf(max);
    warp::zero(sum);
    warp::online_softmax(a, max, sum, factor, scale);
    warp::online_softmax(b, max, sum, factor, scale);
    warp::sum_row_parts(sum);  // online_softmax keeps each lane's part
    store_fragments(b, s);
    store_fragments(max, m);
    store_fragments(sum, l);
    store_fragments(factor, rescale);
  }
}

// The predicate is dsl::masked's, written out here for the device.
template <class RT>
__global__ void fill_where_kernel(Mask m, int offset, float value, const float* in, float* out) {
  RT t;
  load_fragments(t, in);
  warp::fill_where(t, value, [=](int row, int col) { return m == Mask::causal ? col > row + offset : col >= offset; });
  store_fragments(t, out);
}

template <class RT>
__global__ void load_global_kernel(const typename RT::element* global, int ld, float* out) {
  RT t;
  warp::load(t, global, ld);
  store_fragments(t, out);
}

template <class RT>
__global__ void store_global_kernel(const float* in, typename RT::element* global, int ld, int valid_rows) {
  RT t;
  load_fragments(t, in);
  if (valid_rows < RT::rows) {
    warp::store(global, t, ld, valid_rows);
  } else {
    warp::store(global, t, ld);
  }
}

// A vector from N contiguous elements, of global memory or (copied there first) a shared vector.
template <class RV>
__global__ void load_vector_kernel(const typename RV::element* memory, bool through_shared, float* out) {
  __shared__ tk::sv<typename RV::element, RV::length> s;
  RV v;
  if (through_shared) {
    for (int i = threadIdx.x; i < RV::length; i += blockDim.x) s[i] = memory[i];
    __syncwarp();
    warp::load(v, s);
  } else {
    warp::load(v, memory);
  }
  store_fragments(v, out);
}

template <class RV>
__global__ void store_vector_kernel(const float* in, bool through_shared, int valid, typename RV::element* memory) {
  __shared__ tk::sv<typename RV::element, RV::length> s;
  RV v;
  load_fragments(v, in);
  if (through_shared) {
    for (int i = threadIdx.x; i < RV::length; i += blockDim.x) s[i] = memory[i];  // the poison
    __syncwarp();
    warp::store(s, v);
    __syncwarp();
    for (int i = threadIdx.x; i < RV::length; i += blockDim.x) memory[i] = s[i];
  } else if (valid < RV::length) {
    warp::store(memory, v, valid);
  } else {
    warp::store(memory, v);
  }
}

template <class RT>
using shared_tile = tk::st<typename RT::element, RT::rows, RT::cols>;

template <class RT>
__global__ void load_shared_kernel(const typename RT::element* matrix, float* out) {
  __shared__ shared_tile<RT> s;
  for (int at = threadIdx.x; at < RT::rows * RT::cols; at += blockDim.x) s(at / RT::cols, at % RT::cols) = matrix[at];
  __syncwarp();
  RT t;
  warp::load(t, s);
  store_fragments(t, out);
}

template <class RT>
__global__ void store_shared_kernel(const float* in, typename RT::element* matrix) {
  __shared__ shared_tile<RT> s;
  for (int at = threadIdx.x; at < shared_tile<RT>::bytes; at += blockDim.x) s.data[at] = 0xff;  // poison
  __syncwarp();
  RT t;
  load_fragments(t, in);
  warp::store(s, t);
  __syncwarp();
  for (int at = threadIdx.x; at < RT::rows * RT::cols; at += blockDim.x) matrix[at] = s(at / RT::cols, at % RT::cols);
}

template <class T, int M, int K, int N, bool BTransposed>
__global__ void mma_kernel(bool in_place, const float* a_in, const float* b_in, const float* c_in, float* out) {
  using B = std::conditional_t<BTransposed, tk::rt<T, N, K, tk::row_l>, tk::rt<T, K, N, tk::col_l>>;
  tk::rt<T, M, K> a;
  B b;
  tk::rt_fl<M, N> c, d;
  load_fragments(a, a_in);
  load_fragments(b, b_in);
  load_fragments(c, c_in);
  const auto mma = [&](tk::rt_fl<M, N>& dst) {
    if constexpr (BTransposed) {
      warp::mma_ABt(dst, a, b, c);
    } else {
      warp::mma_AB(dst, a, b, c);
    }
    store_fragments(dst, out);
  };
  // Two calls rather than a reference chosen at run time, which would put the tiles in local memory.
  in_place ? mma(c) : mma(d);
}

// ---- Host side: runtime operand -> kernel instantiation, buffers ----

template <class T>
struct tag {
  using type = T;
};

template <class F>
void with_type(DType type, F&& f) {
  switch (type) {
    case DType::f32:
      return f(tag<float>{});
    case DType::bf16:
      return f(tag<__nv_bfloat16>{});
    case DType::f16:
      return f(tag<__half>{});
  }
  throw std::invalid_argument("dsl kernels: unknown element type");
}

// f(tag<rt<T, R, C, L>>) for the tile shapes of kTileShapes.
template <class T, class L, class F>
void with_tile(const Operand& o, F&& f) {
  if (o.rows == 16 && o.cols == 16) return f(tag<tk::rt<T, 16, 16, L>>{});
  if (o.rows == 32 && o.cols == 64) return f(tag<tk::rt<T, 32, 64, L>>{});
  throw std::invalid_argument("dsl kernels: no kernel for this tile shape");
}

// f(tag<rv<T, N, L>>) for the lengths of kVectorLengths.
template <class T, class L, class F>
void with_vector(const Operand& o, F&& f) {
  if (o.cols == 16) return f(tag<tk::rv<T, 16, L>>{});
  if (o.cols == 64) return f(tag<tk::rv<T, 64, L>>{});
  throw std::invalid_argument("dsl kernels: no kernel for this vector length");
}

// f(tag<X>) for the register tile or vector type that `o` describes, holding T.
template <class T, class F>
void with_form(const Operand& o, F&& f) {
  switch (o.form) {
    case Form::row:
      return with_tile<T, tk::row_l>(o, f);
    case Form::col:
      return with_tile<T, tk::col_l>(o, f);
    case Form::group:
      return with_vector<T, tk::group_vl>(o, f);
    case Form::quad:
      return with_vector<T, tk::quad_vl>(o, f);
  }
}

template <class F>
void with_operand(const Operand& o, F&& f) {
  with_type(o.type, [&](auto t) { with_form<typename decltype(t)::type>(o, f); });
}

// f(tag<rt<...>>) for a tile operand of either layout.
template <class F>
void with_tile_operand(const Operand& t, F&& f) {
  if (!is_tile(t)) throw std::invalid_argument("dsl kernels: this operation takes tiles");
  with_type(t.type, [&](auto ty) {
    using T = typename decltype(ty)::type;
    t.form == Form::row ? with_tile<T, tk::row_l>(t, f) : with_tile<T, tk::col_l>(t, f);
  });
}

// f(tag<rv<...>>) for a vector operand of either layout.
template <class F>
void with_vector_operand(const Operand& v, F&& f) {
  if (is_tile(v)) throw std::invalid_argument("dsl kernels: vector loads and stores take vectors");
  with_type(v.type, [&](auto ty) {
    using T = typename decltype(ty)::type;
    v.form == Form::group ? with_vector<T, tk::group_vl>(v, f) : with_vector<T, tk::quad_vl>(v, f);
  });
}

template <class T>
T to_element(float x) {
  if constexpr (std::is_same_v<T, float>) return x;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16(x);
  if constexpr (std::is_same_v<T, __half>) return __float2half(x);
}
template <class T>
float to_float(T x) {
  if constexpr (std::is_same_v<T, float>) return x;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(x);
  if constexpr (std::is_same_v<T, __half>) return __half2float(x);
}

// A device array of n elements, poisoned (all bits set), optionally filled from `values`.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n, const std::vector<float>& values = {}) : n_(n) {
    if (n == 0) return;
    TK_CUDA(cudaMalloc(&ptr_, n * sizeof(T)));
    TK_CUDA(cudaMemset(ptr_, 0xff, n * sizeof(T)));
    if (values.empty()) return;
    if (values.size() != n) throw std::invalid_argument("dsl kernels: input of the wrong size");
    std::vector<T> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = to_element<T>(values[i]);
    TK_CUDA(cudaMemcpy(ptr_, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(ptr_); }

  T* get() const { return ptr_; }
  // Waits for the kernel that wrote it and returns the contents as floats.
  std::vector<float> read() const {
    TK_CUDA(cudaGetLastError());
    TK_CUDA(cudaDeviceSynchronize());
    std::vector<T> host(n_);
    TK_CUDA(cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    std::vector<float> out(n_);
    for (std::size_t i = 0; i < n_; ++i) out[i] = to_float(host[i]);
    return out;
  }

 private:
  T* ptr_ = nullptr;
  std::size_t n_;
};

std::size_t fragment_count(const Operand& o) { return std::size_t(kLanes) * scalars_per_lane(o); }

// A float array holding `values` in fragment order, or nullptr where there are none.
struct Fragments {
  Fragments(const Operand& o, const std::vector<float>& values)
      : array(values.empty() ? 0 : fragment_count(o), values) {}
  const float* get() const { return array.get(); }
  DeviceArray<float> array;
};

}  // namespace

float round_to(DType type, float x) {
  float r = x;
  with_type(type, [&](auto t) { r = to_float(to_element<typename decltype(t)::type>(x)); });
  return r;
}

std::vector<float> run_init(const Operand& d, Init op, float value) {
  DeviceArray<float> out(fragment_count(d));
  with_operand(d, [&](auto x) { init_kernel<typename decltype(x)::type><<<1, kLanes>>>(op, value, out.get()); });
  return out.read();
}

std::vector<float> run_unary(const Operand& d, DType src_type, Unary op, const std::vector<float>& s) {
  if (op != Unary::copy && src_type != d.type) throw std::invalid_argument("dsl kernels: only copy converts");
  const Fragments in({src_type, d.form, d.rows, d.cols}, s);
  DeviceArray<float> out(fragment_count(d));
  with_operand(d, [&](auto dx) {
    using D = typename decltype(dx)::type;
    with_type(src_type, [&](auto src) {
      using S = typename D::template like<typename decltype(src)::type>;
      unary_kernel<D, S><<<1, kLanes>>>(op, in.get(), out.get());
    });
  });
  return out.read();
}

std::vector<float> run_binary(const Operand& d, Binary op, const std::vector<float>& a, const std::vector<float>& b) {
  const Fragments a_in(d, a), b_in(d, b);
  DeviceArray<float> out(fragment_count(d));
  with_operand(d, [&](auto x) {
    binary_kernel<typename decltype(x)::type><<<1, kLanes>>>(op, a_in.get(), b_in.get(), 0.0f, out.get());
  });
  return out.read();
}

std::vector<float> run_binary_scalar(const Operand& d, Binary op, const std::vector<float>& a, float b) {
  const Fragments a_in(d, a);
  DeviceArray<float> out(fragment_count(d));
  with_operand(d, [&](auto x) {
    binary_kernel<typename decltype(x)::type><<<1, kLanes>>>(op, a_in.get(), nullptr, b, out.get());
  });
  return out.read();
}

std::vector<float> run_reduce(const Operand& t, Reduce op, const std::vector<float>& s, const std::vector<float>& prev) {
  const Operand v = op == Reduce::col_max || op == Reduce::col_sum ? col_vec(t) : row_vec(t);
  const Fragments in(t, s), prev_in(v, prev);
  DeviceArray<float> out(fragment_count(v));
  with_tile_operand(t, [&](auto x) {
    reduce_kernel<typename decltype(x)::type><<<1, kLanes>>>(op, in.get(), prev_in.get(), out.get());
  });
  return out.read();
}

std::vector<float> run_broadcast(const Operand& t, Broadcast op, const std::vector<float>& s, const std::vector<float>& v) {
  const Fragments in(t, s), vec(op <= Broadcast::div_row ? row_vec(t) : col_vec(t), v);
  DeviceArray<float> out(fragment_count(t));
  with_tile_operand(t, [&](auto x) {
    broadcast_kernel<typename decltype(x)::type><<<1, kLanes>>>(op, in.get(), vec.get(), out.get());
  });
  return out.read();
}

std::vector<float> run_exp2_row(const Operand& t, float scale, const std::vector<float>& s, const std::vector<float>& v) {
  const Fragments in(t, s), vec(row_vec(t), v);
  DeviceArray<float> out(fragment_count(t));
  with_tile_operand(t, [&](auto x) {
    exp2_row_kernel<typename decltype(x)::type><<<1, kLanes>>>(scale, in.get(), vec.get(), out.get());
  });
  return out.read();
}

std::vector<float> run_exp2_col(const Operand& t, float scale, const std::vector<float>& s, const std::vector<float>& v) {
  const Fragments in(t, s), vec(col_vec(t), v);
  DeviceArray<float> out(fragment_count(t));
  with_tile_operand(t, [&](auto x) {
    exp2_col_kernel<typename decltype(x)::type><<<1, kLanes>>>(scale, in.get(), vec.get(), out.get());
  });
  return out.read();
}

SoftmaxOut run_online_softmax(const Operand& t, float scale, const std::vector<float>& first,
                              const std::vector<float>& second) {
  const Fragments a(t, first), b(t, second);
  DeviceArray<float> s(fragment_count(t)), m(fragment_count(row_vec(t))), l(fragment_count(row_vec(t))), rescale(fragment_count(row_vec(t)));
  with_tile_operand(t, [&](auto x) {
    online_softmax_kernel<typename decltype(x)::type>
        <<<1, kLanes>>>(scale, a.get(), b.get(), s.get(), m.get(), l.get(), rescale.get());
  });
  return {s.read(), m.read(), l.read(), rescale.read()};
}

std::vector<float> run_fill_where(const Operand& t, Mask m, int offset, float value, const std::vector<float>& s) {
  const Fragments in(t, s);
  DeviceArray<float> out(fragment_count(t));
  with_tile_operand(t, [&](auto x) {
    fill_where_kernel<typename decltype(x)::type><<<1, kLanes>>>(m, offset, value, in.get(), out.get());
  });
  return out.read();
}

std::vector<float> run_load_global(const Operand& t, int ld, const std::vector<float>& global) {
  DeviceArray<float> out(fragment_count(t));
  with_tile_operand(t, [&](auto x) {
    using RT = typename decltype(x)::type;
    const DeviceArray<typename RT::element> g(std::size_t(t.rows) * ld, global);
    load_global_kernel<RT><<<1, kLanes>>>(g.get(), ld, out.get());
    TK_CUDA(cudaDeviceSynchronize());  // before g is freed
  });
  return out.read();
}

std::vector<float> run_store_global(const Operand& t, int ld, const std::vector<float>& s, int valid_rows) {
  const Fragments in(t, s);
  std::vector<float> result;
  with_tile_operand(t, [&](auto x) {
    using RT = typename decltype(x)::type;
    const DeviceArray<typename RT::element> g(std::size_t(t.rows) * ld);
    store_global_kernel<RT><<<1, kLanes>>>(in.get(), g.get(), ld, valid_rows);
    result = g.read();
  });
  return result;
}

std::vector<float> run_load_vector(const Operand& v, bool through_shared, const std::vector<float>& memory) {
  DeviceArray<float> out(fragment_count(v));
  with_vector_operand(v, [&](auto x) {
    using RV = typename decltype(x)::type;
    const DeviceArray<typename RV::element> m(RV::length, memory);
    load_vector_kernel<RV><<<1, kLanes>>>(m.get(), through_shared, out.get());
    TK_CUDA(cudaDeviceSynchronize());  // before m is freed
  });
  return out.read();
}

std::vector<float> run_store_vector(const Operand& v, bool through_shared, const std::vector<float>& s, int valid) {
  const Fragments in(v, s);
  std::vector<float> result;
  with_vector_operand(v, [&](auto x) {
    using RV = typename decltype(x)::type;
    const DeviceArray<typename RV::element> m(RV::length);
    store_vector_kernel<RV><<<1, kLanes>>>(in.get(), through_shared, valid, m.get());
    result = m.read();
  });
  return result;
}

std::vector<float> run_load_shared(const Operand& t, const std::vector<float>& matrix) {
  DeviceArray<float> out(fragment_count(t));
  with_tile_operand(t, [&](auto x) {
    using RT = typename decltype(x)::type;
    const DeviceArray<typename RT::element> m(std::size_t(t.rows) * t.cols, matrix);
    load_shared_kernel<RT><<<1, kLanes>>>(m.get(), out.get());
    TK_CUDA(cudaDeviceSynchronize());  // before m is freed
  });
  return out.read();
}

std::vector<float> run_store_shared(const Operand& t, const std::vector<float>& s) {
  const Fragments in(t, s);
  std::vector<float> result;
  with_tile_operand(t, [&](auto x) {
    using RT = typename decltype(x)::type;
    const DeviceArray<typename RT::element> m(std::size_t(t.rows) * t.cols);
    store_shared_kernel<RT><<<1, kLanes>>>(in.get(), m.get());
    result = m.read();
  });
  return result;
}

namespace {

template <class T, int M, int K, int N>
void launch_mma(const MmaCase& c, const float* a, const float* b, const float* acc, float* out) {
  if (c.b_transposed) {
    mma_kernel<T, M, K, N, true><<<1, kLanes>>>(c.in_place, a, b, acc, out);
  } else {
    mma_kernel<T, M, K, N, false><<<1, kLanes>>>(c.in_place, a, b, acc, out);
  }
}

template <class T>
void launch_mma_shape(const MmaCase& c, const float* a, const float* b, const float* acc, float* out) {
  if (c.m == 16 && c.k == 16 && c.n == 16) return launch_mma<T, 16, 16, 16>(c, a, b, acc, out);
  if (c.m == 32 && c.k == 64 && c.n == 48) return launch_mma<T, 32, 64, 48>(c, a, b, acc, out);
  throw std::invalid_argument("dsl kernels: no mma kernel for this shape");
}

}  // namespace

std::vector<float> run_mma(const MmaCase& c, const std::vector<float>& a, const std::vector<float>& b,
                           const std::vector<float>& acc) {
  const Operand a_op{c.type, Form::row, c.m, c.k}, acc_op{DType::f32, Form::row, c.m, c.n};
  const Operand b_op = c.b_transposed ? Operand{c.type, Form::row, c.n, c.k} : Operand{c.type, Form::col, c.k, c.n};
  const Fragments a_in(a_op, a), b_in(b_op, b), acc_in(acc_op, acc);
  DeviceArray<float> out(fragment_count(acc_op));
  switch (c.type) {
    case DType::bf16:
      launch_mma_shape<__nv_bfloat16>(c, a_in.get(), b_in.get(), acc_in.get(), out.get());
      break;
    case DType::f16:
      launch_mma_shape<__half>(c, a_in.get(), b_in.get(), acc_in.get(), out.get());
      break;
    default:
      throw std::invalid_argument("dsl kernels: mma takes bf16 or f16");
  }
  return out.read();
}

}  // namespace tkprobe::test_kernels::dsl
