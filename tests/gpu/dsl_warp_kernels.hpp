#pragma once
// One-warp kernels that run each warp-scope operation of the tile DSL (kernels/tk/warp.cuh),
// for the GPU tests. Register contents travel as floats in fragment order: scalar f of lane l's
// registers at index l * scalars_per_lane + f, where `coord` says which tile element or vector
// entry it is (tk/layout/rt_layout.hpp). Inputs are values of the element type (round_to), so
// the kernels take them exactly; every output is poisoned (all bits set, a NaN) before the
// kernel runs. Each function throws where no kernel is built for its operand shape.
#include <vector>

#include "kernels/tk/layout/rt_layout.hpp"

namespace tkprobe::test_kernels::dsl {

enum class DType { f32, bf16, f16 };
enum class Form { row, col, group, quad };  // rt row_l, rt col_l, rv group_vl, rv quad_vl

// A register tile (rows x cols) or vector (rows = 1, cols = its length).
struct Operand {
  DType type;
  Form form;
  int rows, cols;
};

// The shapes with kernels: tiles of every form and type, vectors of every layout and type.
inline constexpr int kTileShapes[][2] = {{16, 16}, {32, 64}};
inline constexpr int kVectorLengths[] = {16, 64};
// mma shapes, M x K x N.
inline constexpr int kMmaShapes[][3] = {{16, 16, 16}, {32, 64, 48}};

inline constexpr int kLanes = 32;

inline bool is_tile(const Operand& o) { return o.form == Form::row || o.form == Form::col; }
inline int scalars_per_lane(const Operand& o) {
  if (is_tile(o)) return o.rows * o.cols / kLanes;
  const auto l = o.form == Form::group ? tk::layout::RvLayout::group : tk::layout::RvLayout::quad;
  return o.cols / tk::layout::kSubtile * tk::layout::rv_pairs_per_16(l) * 2;
}

// The tile element, or the vector entry (row 0, column = entry), of scalar f of `lane`.
inline tk::layout::Coord coord(const Operand& o, int lane, int f) {
  switch (o.form) {
    case Form::row:
      return tk::layout::rt_element(lane, f, o.cols, tk::layout::RtLayout::row);
    case Form::col:
      return tk::layout::rt_element(lane, f, o.cols, tk::layout::RtLayout::col);
    case Form::group:
      return {0, tk::layout::rv_entry(lane, f, tk::layout::RvLayout::group)};
    default:
      return {0, tk::layout::rv_entry(lane, f, tk::layout::RvLayout::quad)};
  }
}

// The vectors that line up with a tile's rows and columns (rt::row_vec, rt::col_vec): group_vl
// and quad_vl for a row_l tile, quad_vl and group_vl for a col_l one.
inline Form vector_form(const Operand& t, tk::layout::Axis axis) {
  const auto tile = t.form == Form::row ? tk::layout::RtLayout::row : tk::layout::RtLayout::col;
  return tk::layout::rv_layout_along(tile, axis) == tk::layout::RvLayout::group ? Form::group : Form::quad;
}
inline Operand row_vec(const Operand& t) { return {t.type, vector_form(t, tk::layout::Axis::row), 1, t.rows}; }
inline Operand col_vec(const Operand& t) { return {t.type, vector_form(t, tk::layout::Axis::col), 1, t.cols}; }

// x rounded to the nearest value of `type`.
float round_to(DType type, float x);

enum class Init { zero, fill, neg_inf };
enum class Unary { exp, exp2, abs, copy, log, log2 };
enum class Binary { add, sub, mul, div, max, min };
// row_sum_parts: row_sum_part from zero, then sum_row_parts (then prev added, for accumulate):
// the sum in parts must come out as row_sum does.
enum class Reduce { row_max, row_sum, row_sum_parts, col_max, col_sum };
enum class Broadcast { add_row, sub_row, mul_row, div_row, add_col, sub_col, mul_col, div_col };

std::vector<float> run_init(const Operand& d, Init op, float value);
// d = op(s), s of the same form and shape holding `src_type` (only copy converts).
std::vector<float> run_unary(const Operand& d, DType src_type, Unary op, const std::vector<float>& s);
std::vector<float> run_binary(const Operand& d, Binary op, const std::vector<float>& a, const std::vector<float>& b);
std::vector<float> run_binary_scalar(const Operand& d, Binary op, const std::vector<float>& a, float b);
// A tile (either layout) reduced into its row_vec (row_*) or col_vec (col_*). With `prev`
// (fragment order, non-empty) the accumulating form, in place: v = prev; row_max(v, s, v).
std::vector<float> run_reduce(const Operand& t, Reduce op, const std::vector<float>& s, const std::vector<float>& prev);
// d = op(s, v) for a tile s (either layout) and its row_vec (xxx_row) or col_vec (xxx_col).
std::vector<float> run_broadcast(const Operand& t, Broadcast op, const std::vector<float>& s, const std::vector<float>& v);
// warp::online_softmax over two float row_l tiles in turn (m = -inf, l = 0 before the first):
// the second tile's probabilities, then the vectors m, l and the last rescale, in fragment order.
struct SoftmaxOut {
  std::vector<float> s, m, l, rescale;
};
SoftmaxOut run_online_softmax(const Operand& t, float scale, const std::vector<float>& first,
                              const std::vector<float>& second);
// warp::exp2_row on a float tile t (either layout): 2^(scale s - v(row)).
std::vector<float> run_exp2_row(const Operand& t, float scale, const std::vector<float>& s, const std::vector<float>& v);
// warp::exp2_col on a float tile t (either layout): 2^(scale s - v(col)).
std::vector<float> run_exp2_col(const Operand& t, float scale, const std::vector<float>& s, const std::vector<float>& v);

// warp::fill_where on a tile (either layout) holding s: the elements whose tile coordinates
// (row, col) the mask picks become `value`. causal: col > row + offset (a causal mask whose
// diagonal is shifted by `offset`, as attention's q0 - kv0); cols_from: col >= offset (the
// columns past the end of a partial key tile).
enum class Mask { causal, cols_from };
inline bool masked(Mask m, int offset, int row, int col) {
  return m == Mask::causal ? col > row + offset : col >= offset;
}
std::vector<float> run_fill_where(const Operand& t, Mask m, int offset, float value, const std::vector<float>& s);

// Global memory, rows x ld elements row-major, into a tile; a tile into global memory (the
// returned buffer is all rows x ld, the columns past the tile left poisoned), with valid_rows
// < rows through the bounded store (rows from valid_rows on left poisoned too).
std::vector<float> run_load_global(const Operand& t, int ld, const std::vector<float>& global);
std::vector<float> run_store_global(const Operand& t, int ld, const std::vector<float>& s, int valid_rows);
// A vector loaded from its N entries in global memory or, with through_shared, in a shared
// vector (sv); a vector stored there (the returned entries start poisoned), into global memory
// with valid < N through the bounded store.
std::vector<float> run_load_vector(const Operand& v, bool through_shared, const std::vector<float>& memory);
std::vector<float> run_store_vector(const Operand& v, bool through_shared, const std::vector<float>& s, int valid);
// An st<T, rows, cols> written element by element (st::operator()) from a row-major matrix,
// loaded into a tile; a tile stored into an st (poisoned first), read back element by element.
std::vector<float> run_load_shared(const Operand& t, const std::vector<float>& matrix);
std::vector<float> run_store_shared(const Operand& t, const std::vector<float>& s);

// d = a * b + c, a row_l M x K of `type` (bf16 or f16), c and d float row_l M x N; b col_l
// K x N (mma_AB) or, with b_transposed, row_l N x K (mma_ABt). in_place: d is c.
struct MmaCase {
  DType type;
  int m, k, n;
  bool b_transposed, in_place;
};
std::vector<float> run_mma(const MmaCase& c, const std::vector<float>& a, const std::vector<float>& b,
                           const std::vector<float>& acc);

}  // namespace tkprobe::test_kernels::dsl
