// The tile DSL's warp-scope operations (kernels/tk/warp.cuh) on the GPU, each against a host
// reference on fresh random data: every element type, every tile or vector form, two sizes
// (tests/gpu/dsl_warp_kernels.hpp). Inputs are magnitudes in [0.5, 2) of either sign, rounded
// to the element type, so none is zero; outputs start poisoned (NaN), so an element a kernel
// leaves unwritten fails. A check passes where |got - ref| <= tol * scale, scale |ref| unless
// said otherwise:
//   exact operations (init, abs, max/min, row/column max, fill_where, copy to a wider type,
//   loads/stores): tol 0;
//   rounded once to the element type: float 1e-6, bf16 1e-2 (8-bit significand), fp16 2e-3;
//   exp, exp2, log in float: 1e-5 (__expf is within 2 + 1.173|x| ulp, exp2f 2 ulp, logf 1 ulp);
//   sums: scale = sum of |terms|, tol 1e-5 for float (float accumulation), else as rounded once;
//   mma: scale = sum |a b| + |c|, tol 1e-4 (fp32 accumulation over K <= 64).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/gpu/dsl_warp_kernels.hpp"

namespace dsl = tkprobe::test_kernels::dsl;
using dsl::Binary;
using dsl::Broadcast;
using dsl::DType;
using dsl::Form;
using dsl::Init;
using dsl::Operand;
using dsl::Reduce;
using dsl::Unary;

namespace {

constexpr DType kTypes[] = {DType::f32, DType::bf16, DType::f16};
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

std::string name(DType t) { return t == DType::f32 ? "f32" : t == DType::bf16 ? "bf16" : "f16"; }

std::string name(const Operand& o) {
  const char* forms[] = {"rt row_l", "rt col_l", "rv group_vl", "rv quad_vl"};
  std::ostringstream s;
  s << name(o.type) << " " << forms[int(o.form)] << " " << o.rows << "x" << o.cols;
  return s.str();
}

// Every tile form and shape, every vector form and length, of every type.
std::vector<Operand> all_operands() {
  std::vector<Operand> out;
  for (const DType t : kTypes) {
    for (const auto& shape : dsl::kTileShapes)
      for (const Form f : {Form::row, Form::col}) out.push_back({t, f, shape[0], shape[1]});
    for (const int n : dsl::kVectorLengths)
      for (const Form f : {Form::group, Form::quad}) out.push_back({t, f, 1, n});
  }
  return out;
}

// Every tile form and shape of every type.
std::vector<Operand> tiles() {
  std::vector<Operand> out;
  for (const Operand& o : all_operands())
    if (dsl::is_tile(o)) out.push_back(o);
  return out;
}

// Fresh random values: magnitudes in [0.5, 2), random sign, rounded to `type`.
class Random {
 public:
  Random() : seed_(std::random_device{}()), gen_(seed_) {}
  unsigned seed() const { return seed_; }
  float value(DType type) {
    const float v = std::uniform_real_distribution<float>(0.5f, 2.0f)(gen_);
    return dsl::round_to(type, std::bernoulli_distribution(0.5)(gen_) ? v : -v);
  }
  std::vector<float> values(DType type, std::size_t n) {
    std::vector<float> out(n);
    for (auto& v : out) v = value(type);
    return out;
  }
  int below(int n) { return std::uniform_int_distribution<int>(0, n - 1)(gen_); }

 private:
  unsigned seed_;
  std::mt19937 gen_;
};

double tolerance(DType t) { return t == DType::f32 ? 1e-6 : t == DType::bf16 ? 1e-2 : 2e-3; }

// Counts elements outside |got - ref| <= tol * scale (a NaN ref wants a NaN: an untouched
// poisoned element; infinite refs want themselves) and reports the first few.
void expect_close(const std::vector<float>& got, const std::vector<double>& ref, const std::vector<double>& scale,
                  double tol, const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  int bad = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::isnan(ref[i])   ? std::isnan(got[i])
                    : std::isinf(ref[i]) ? double(got[i]) == ref[i]
                                         : std::abs(double(got[i]) - ref[i]) <= tol * scale[i];
    if (!ok && bad++ < 4) first << "\n  [" << i << "] got " << got[i] << ", want " << ref[i];
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " elements wrong:" << first.str();
}

void expect_close(const std::vector<float>& got, const std::vector<double>& ref, double tol, const std::string& what) {
  std::vector<double> scale(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) scale[i] = std::abs(ref[i]);
  expect_close(got, ref, scale, tol, what);
}

// f(coord, position) for every fragment-order position of `o`.
template <class F>
void for_each_fragment(const Operand& o, F f) {
  const int n = dsl::scalars_per_lane(o);
  for (int lane = 0; lane < dsl::kLanes; ++lane)
    for (int k = 0; k < n; ++k) f(dsl::coord(o, lane, k), lane * n + k);
}

// A value per fragment-order position of `o`: f(coord, position).
template <class T, class F>
std::vector<T> per_fragment(const Operand& o, F f) {
  std::vector<T> out(std::size_t(dsl::kLanes) * dsl::scalars_per_lane(o));
  for_each_fragment(o, [&](tk::layout::Coord c, int at) { out[at] = f(c, at); });
  return out;
}

// A row-major rows x cols matrix from fragments of a tile.
std::vector<float> gather(const Operand& o, const std::vector<float>& fragments) {
  std::vector<float> m(std::size_t(o.rows) * o.cols);
  for_each_fragment(o, [&](tk::layout::Coord c, int at) { m[c.row * o.cols + c.col] = fragments[at]; });
  return m;
}

// Fragments of a tile (or vector, rows = 1) from a row-major matrix.
std::vector<float> scatter(const Operand& o, const std::vector<float>& m) {
  return per_fragment<float>(o, [&](tk::layout::Coord c, int) { return m[c.row * o.cols + c.col]; });
}

double apply(Binary op, double a, double b) {
  switch (op) {
    case Binary::add:
      return a + b;
    case Binary::sub:
      return a - b;
    case Binary::mul:
      return a * b;
    case Binary::div:
      return a / b;
    case Binary::max:
      return std::max(a, b);
    default:
      return std::min(a, b);
  }
}

}  // namespace

TEST(DslWarp, Init) {
  Random rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  for (const Operand& o : all_operands()) {
    const float value = rng.value(o.type);
    const std::size_t n = std::size_t(dsl::kLanes) * dsl::scalars_per_lane(o);
    const std::pair<Init, double> cases[] = {
        {Init::zero, 0.0}, {Init::fill, value}, {Init::neg_inf, -std::numeric_limits<double>::infinity()}};
    for (const auto& [op, want] : cases) {
      const std::vector<double> ref(n, want);
      expect_close(dsl::run_init(o, op, value), ref, 0.0, name(o) + " init " + std::to_string(int(op)));
    }
  }
}

TEST(DslWarp, Unary) {
  Random rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  const std::pair<Unary, double (*)(double)> cases[] = {
      {Unary::exp, [](double x) { return std::exp(x); }},
      {Unary::exp2, [](double x) { return std::exp2(x); }},
      {Unary::abs, [](double x) { return std::abs(x); }},
      {Unary::log, [](double x) { return std::log(x); }},
      {Unary::log2, [](double x) { return std::log2(x); }},
  };
  for (const Operand& o : all_operands())
    for (const auto& [op, f] : cases) {
      auto in = rng.values(o.type, std::size_t(dsl::kLanes) * dsl::scalars_per_lane(o));
      if (op == Unary::log || op == Unary::log2) {
        for (float& x : in) x = std::abs(x);  // in its domain
      }
      std::vector<double> ref(in.size());
      for (std::size_t i = 0; i < in.size(); ++i) ref[i] = f(in[i]);
      const bool transcendental = op != Unary::abs;
      const double tol = o.type == DType::f32 ? (transcendental ? 1e-5 : 0.0) : tolerance(o.type);
      expect_close(dsl::run_unary(o, o.type, op, in), ref, tol, name(o) + " unary " + std::to_string(int(op)));
    }
}

TEST(DslWarp, CopyConverts) {
  Random rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  for (const Operand& o : all_operands())
    for (const DType src : kTypes) {
      const auto in = rng.values(src, std::size_t(dsl::kLanes) * dsl::scalars_per_lane(o));
      const std::vector<double> ref(in.begin(), in.end());
      // Exact into a type at least as precise (f32 > fp16 > bf16 for these magnitudes), else rounded once.
      const bool exact = o.type == src || o.type == DType::f32 || (src == DType::bf16 && o.type == DType::f16);
      const double tol = exact ? 0.0 : tolerance(o.type);
      expect_close(dsl::run_unary(o, src, Unary::copy, in), ref, tol, name(o) + " copy from " + name(src));
    }
}

TEST(DslWarp, Binary) {
  Random rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  for (const Operand& o : all_operands())
    for (const Binary op : {Binary::add, Binary::sub, Binary::mul, Binary::div, Binary::max, Binary::min}) {
      const std::size_t n = std::size_t(dsl::kLanes) * dsl::scalars_per_lane(o);
      const auto a = rng.values(o.type, n), b = rng.values(o.type, n);
      const float scalar = rng.value(o.type);
      std::vector<double> ref(n), ref_scalar(n);
      for (std::size_t i = 0; i < n; ++i) ref[i] = apply(op, a[i], b[i]), ref_scalar[i] = apply(op, a[i], scalar);
      const std::string what = name(o) + " binary " + std::to_string(int(op));
      expect_close(dsl::run_binary(o, op, a, b), ref, tolerance(o.type), what + " tile-tile");
      expect_close(dsl::run_binary_scalar(o, op, a, scalar), ref_scalar, tolerance(o.type), what + " tile-scalar");
    }
}

TEST(DslWarp, Reductions) {
  Random rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  for (const Operand& t : tiles())
    for (const Reduce op : {Reduce::row_max, Reduce::row_sum, Reduce::row_sum_parts, Reduce::col_max, Reduce::col_sum})
      for (const bool accumulate : {false, true}) {
        const bool rows = op != Reduce::col_max && op != Reduce::col_sum;
        const bool sum = op != Reduce::row_max && op != Reduce::col_max;
        const Operand v = rows ? dsl::row_vec(t) : dsl::col_vec(t);
        const auto in = rng.values(t.type, std::size_t(dsl::kLanes) * dsl::scalars_per_lane(t));
        const auto m = gather(t, in);
        const auto prev_entries = rng.values(t.type, v.cols);
        // Per vector entry: the reduction over its row (column), and the sum of |terms|.
        std::vector<double> want(v.cols), mag(v.cols);
        for (int e = 0; e < v.cols; ++e) {
          double acc = sum ? 0.0 : -std::numeric_limits<double>::infinity(), abs_sum = 0.0;
          for (int i = 0; i < (rows ? t.cols : t.rows); ++i) {
            const double x = rows ? m[e * t.cols + i] : m[i * t.cols + e];
            acc = sum ? acc + x : std::max(acc, x);
            abs_sum += std::abs(x);
          }
          if (accumulate) {
            acc = sum ? acc + prev_entries[e] : std::max(acc, double(prev_entries[e]));
            abs_sum += std::abs(prev_entries[e]);
          }
          want[e] = acc;
          mag[e] = sum ? abs_sum : std::abs(acc);
        }
        const auto ref = per_fragment<double>(v, [&](tk::layout::Coord c, int) { return want[c.col]; });
        const auto scale = per_fragment<double>(v, [&](tk::layout::Coord c, int) { return mag[c.col]; });
        const auto prev = accumulate ? scatter(v, prev_entries) : std::vector<float>{};
        // A max is one of its inputs, exact in any type; a sum rounds (see the file comment).
        const double tol = !sum ? 0.0 : t.type == DType::f32 ? 1e-5 : tolerance(t.type);
        const char* names[] = {"row_max", "row_sum", "row_sum_parts", "col_max", "col_sum"};
        expect_close(dsl::run_reduce(t, op, in, prev), ref, scale, tol,
                     name(t) + " " + names[int(op)] + (accumulate ? " accumulating" : ""));
      }
}

TEST(DslWarp, Broadcasts) {
  Random rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  const Binary ops[] = {Binary::add, Binary::sub, Binary::mul, Binary::div};
  const char* names[] = {"add_row", "sub_row", "mul_row", "div_row", "add_col", "sub_col", "mul_col", "div_col"};
  for (const Operand& t : tiles())
    for (int i = 0; i < 8; ++i) {
      const auto op = Broadcast(i);
      const bool rows = op <= Broadcast::div_row;
      const Operand v = rows ? dsl::row_vec(t) : dsl::col_vec(t);
      const auto in = rng.values(t.type, std::size_t(dsl::kLanes) * dsl::scalars_per_lane(t));
      const auto entries = rng.values(t.type, v.cols);
      const auto ref = per_fragment<double>(t, [&](tk::layout::Coord c, int at) {
        return apply(ops[i % 4], in[at], entries[rows ? c.row : c.col]);
      });
      expect_close(dsl::run_broadcast(t, op, in, scatter(v, entries)), ref, tolerance(t.type),
                   name(t) + " " + names[i]);
    }
}

// exp2_row: one FFMA (one rounding) and ex2.approx.ftz (2^-22 relative, PTX ISA "ex2"): with
// arguments up to ~10 in size the result is within 1e-5 of 2^(scale s - v) in double.
TEST(DslWarp, Exp2Row) {
  Random rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  int shapes = 0;
  for (const Operand& t : tiles()) {
    if (t.type != DType::f32) continue;
    ++shapes;
    const float scale = 0.18033688f;  // log2(e) / sqrt(64), as attention at head dim 64 uses it
    const Operand v = dsl::row_vec(t);
    const auto in = rng.values(t.type, std::size_t(dsl::kLanes) * dsl::scalars_per_lane(t));
    const auto entries = rng.values(t.type, v.cols);
    const auto ref = per_fragment<double>(t, [&](tk::layout::Coord c, int at) {
      return std::exp2(double(scale) * in[at] - entries[c.row]);
    });
    expect_close(dsl::run_exp2_row(t, scale, in, scatter(v, entries)), ref, 1e-5, name(t) + " exp2_row");
  }
  EXPECT_EQ(shapes, 4) << "exp2_row is tested at two tile sizes in each layout";
}

// exp2_col: exp2_row along the columns, with the same tolerance.
TEST(DslWarp, Exp2Col) {
  Random rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  int shapes = 0;
  for (const Operand& t : tiles()) {
    if (t.type != DType::f32) continue;
    ++shapes;
    const float scale = 0.12751743f;  // log2(e) / sqrt(128)
    const Operand v = dsl::col_vec(t);
    const auto in = rng.values(t.type, std::size_t(dsl::kLanes) * dsl::scalars_per_lane(t));
    const auto entries = rng.values(t.type, v.cols);
    const auto ref = per_fragment<double>(t, [&](tk::layout::Coord c, int at) {
      return std::exp2(double(scale) * in[at] - entries[c.col]);
    });
    expect_close(dsl::run_exp2_col(t, scale, in, scatter(v, entries)), ref, 1e-5, name(t) + " exp2_col");
  }
  EXPECT_EQ(shapes, 4) << "exp2_col is tested at two tile sizes in each layout";
}

// online_softmax over two tiles against double: the first holds a -inf in every row but a
// finite maximum, as a masked first key tile does. Tolerance as exp2_row's (the same FFMA and
// ex2.approx), over sums of up to 64 terms.
TEST(DslWarp, OnlineSoftmax) {
  Random rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  int shapes = 0;
  for (const Operand& t : tiles()) {
    if (t.type != DType::f32 || t.form != dsl::Form::row) continue;
    ++shapes;
    const float scale = 0.12751743f;  // log2(e) / sqrt(128)
    const auto fragments = std::size_t(dsl::kLanes) * dsl::scalars_per_lane(t);
    auto first = rng.values(t.type, fragments);
    const auto second = rng.values(t.type, fragments);
    const auto a = gather(t, first), b = gather(t, second);
    std::vector<double> m(t.rows), l(t.rows), rescale(t.rows);
    std::vector<char> masked(a.size());
    for (int r = 0; r < t.rows; ++r) {
      masked[r * t.cols + (r * 7 + 3) % t.cols] = 1;  // one masked key per row, never the only one
      double m1 = -INFINITY, l1 = 0;
      for (int c = 0; c < t.cols; ++c) m1 = masked[r * t.cols + c] ? m1 : std::max(m1, double(a[r * t.cols + c]));
      for (int c = 0; c < t.cols; ++c) l1 += masked[r * t.cols + c] ? 0 : std::exp2(scale * (a[r * t.cols + c] - m1));
      m[r] = m1;
      for (int c = 0; c < t.cols; ++c) m[r] = std::max(m[r], double(b[r * t.cols + c]));
      rescale[r] = std::exp2(scale * (m1 - m[r]));
      l[r] = l1 * rescale[r];
      for (int c = 0; c < t.cols; ++c) l[r] += std::exp2(scale * (b[r * t.cols + c] - m[r]));
    }
    first = per_fragment<float>(t, [&](tk::layout::Coord c, int at) {
      return masked[c.row * t.cols + c.col] ? -INFINITY : first[at];
    });
    const auto out = dsl::run_online_softmax(t, scale, first, second);
    const Operand v = dsl::row_vec(t);
    const auto entry = [&](const std::vector<double>& x) {
      return per_fragment<double>(v, [&](tk::layout::Coord c, int) { return x[c.col]; });
    };
    const auto probs = per_fragment<double>(t, [&](tk::layout::Coord c, int at) {
      return std::exp2(scale * (second[at] - m[c.row]));
    });
    expect_close(out.s, probs, 1e-5, name(t) + " online_softmax probabilities");
    expect_close(out.m, entry(m), 0.0, name(t) + " online_softmax max");  // a max is one of its inputs
    expect_close(out.l, entry(l), 1e-5, name(t) + " online_softmax sum");
    expect_close(out.rescale, entry(rescale), 1e-5, name(t) + " online_softmax rescale");
  }
  EXPECT_EQ(shapes, 2) << "online_softmax is tested at two tile sizes";
}

TEST(DslWarp, FillWhere) {
  Random rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  // Causal masks with the diagonal shifted either way and a partial key tile; each picks some
  // elements and spares others in every tile shape (checked below).
  const std::pair<dsl::Mask, int> masks[] = {
      {dsl::Mask::causal, -5}, {dsl::Mask::causal, 0}, {dsl::Mask::causal, 9}, {dsl::Mask::cols_from, 7}};
  for (const Operand& t : tiles())
    for (const auto& [mask, offset] : masks)
      for (const float value : {-std::numeric_limits<float>::infinity(), rng.value(t.type)}) {
        const auto in = rng.values(t.type, std::size_t(dsl::kLanes) * dsl::scalars_per_lane(t));
        int picked = 0;
        const auto ref = per_fragment<double>(t, [&](tk::layout::Coord c, int at) {
          const bool m = dsl::masked(mask, offset, c.row, c.col);
          picked += m;
          return m ? double(value) : double(in[at]);
        });
        const std::string what = name(t) + (mask == dsl::Mask::causal ? " causal " : " cols_from ") +
                                 std::to_string(offset) + " value " + std::to_string(value);
        ASSERT_TRUE(picked > 0 && picked < int(ref.size())) << what << ": the mask must pick some elements, not all";
        // Picked elements become the value, the others stay as they were: all exact.
        expect_close(dsl::run_fill_where(t, mask, offset, value, in), ref, 0.0, what);
      }
}

TEST(DslWarp, GlobalLoadStore) {
  Random rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  for (const Operand& t : all_operands()) {
    if (!dsl::is_tile(t)) continue;
    const int ld = t.cols + 8;  // a row pitch wider than the tile: the padding must stay untouched
    const auto global = rng.values(t.type, std::size_t(t.rows) * ld);
    const auto loaded = per_fragment<double>(t, [&](tk::layout::Coord c, int) { return global[c.row * ld + c.col]; });
    expect_close(dsl::run_load_global(t, ld, global), loaded, 0.0, name(t) + " load global");

    const auto in = rng.values(t.type, std::size_t(dsl::kLanes) * dsl::scalars_per_lane(t));
    for (const int valid_rows : {t.rows, rng.below(t.rows)}) {  // every row, and the bounded store
      std::vector<double> stored(std::size_t(t.rows) * ld, kNan);
      for_each_fragment(t, [&](tk::layout::Coord c, int at) {
        if (c.row < valid_rows) stored[c.row * ld + c.col] = in[at];
      });
      expect_close(dsl::run_store_global(t, ld, in, valid_rows), stored, 0.0,
                   name(t) + " store global, " + std::to_string(valid_rows) + " valid rows");
    }
  }
}

TEST(DslWarp, VectorLoadStore) {
  Random rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  for (const Operand& v : all_operands()) {
    if (dsl::is_tile(v)) continue;
    for (const bool through_shared : {false, true}) {
      const std::string where = through_shared ? " (shared vector)" : " (global)";
      const auto entries = rng.values(v.type, std::size_t(v.cols));
      const auto loaded = per_fragment<double>(v, [&](tk::layout::Coord c, int) { return entries[c.col]; });
      expect_close(dsl::run_load_vector(v, through_shared, entries), loaded, 0.0, name(v) + " load" + where);
      // Replicated entries agree, so every lane's copy is the same value.
      const auto fragments = per_fragment<float>(v, [&](tk::layout::Coord c, int) { return float(entries[c.col]); });
      expect_close(dsl::run_store_vector(v, through_shared, fragments, v.cols),
                   std::vector<double>(entries.begin(), entries.end()), 0.0, name(v) + " store" + where);
      if (through_shared) continue;
      const int valid = rng.below(v.cols);  // the bounded store
      std::vector<double> stored(entries.begin(), entries.end());
      std::fill(stored.begin() + valid, stored.end(), kNan);
      expect_close(dsl::run_store_vector(v, through_shared, fragments, valid), stored, 0.0,
                   name(v) + " store" + where + ", " + std::to_string(valid) + " valid entries");
    }
  }
}

TEST(DslWarp, SharedLoadStore) {
  Random rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  for (const Operand& t : all_operands()) {
    if (!dsl::is_tile(t)) continue;
    const auto matrix = rng.values(t.type, std::size_t(t.rows) * t.cols);
    const auto loaded = scatter(t, matrix);
    expect_close(dsl::run_load_shared(t, matrix), std::vector<double>(loaded.begin(), loaded.end()), 0.0,
                 name(t) + " load shared");

    const auto in = rng.values(t.type, std::size_t(dsl::kLanes) * dsl::scalars_per_lane(t));
    const auto stored = gather(t, in);
    expect_close(dsl::run_store_shared(t, in), std::vector<double>(stored.begin(), stored.end()), 0.0,
                 name(t) + " store shared");
  }
}

TEST(DslWarp, Mma) {
  Random rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  for (const DType type : {DType::bf16, DType::f16})
    for (const auto& shape : dsl::kMmaShapes)
      for (const bool transposed : {false, true})
        for (const bool in_place : {false, true}) {
          const dsl::MmaCase c{type, shape[0], shape[1], shape[2], transposed, in_place};
          const auto a = rng.values(type, std::size_t(c.m) * c.k), b = rng.values(type, std::size_t(c.k) * c.n);
          const auto acc = rng.values(DType::f32, std::size_t(c.m) * c.n);
          std::vector<double> want(acc.size()), mag(acc.size());
          for (int i = 0; i < c.m; ++i)
            for (int j = 0; j < c.n; ++j) {
              double sum = acc[i * c.n + j], abs_sum = std::abs(sum);
              for (int k = 0; k < c.k; ++k) {
                const double p = double(a[i * c.k + k]) * b[k * c.n + j];
                sum += p, abs_sum += std::abs(p);
              }
              want[i * c.n + j] = sum, mag[i * c.n + j] = abs_sum;
            }
          // B as mma_AB takes it (col_l K x N) or as mma_ABt does (row_l N x K, holding B^T).
          const Operand b_op = transposed ? Operand{type, Form::row, c.n, c.k} : Operand{type, Form::col, c.k, c.n};
          const auto b_frag = per_fragment<float>(b_op, [&](tk::layout::Coord p, int) {
            return transposed ? b[p.col * c.n + p.row] : b[p.row * c.n + p.col];
          });
          const Operand d_op{DType::f32, Form::row, c.m, c.n};
          const auto got = dsl::run_mma(c, scatter({type, Form::row, c.m, c.k}, a), b_frag, scatter(d_op, acc));
          const auto ref = per_fragment<double>(d_op, [&](tk::layout::Coord p, int) { return want[p.row * c.n + p.col]; });
          const auto scale = per_fragment<double>(d_op, [&](tk::layout::Coord p, int) { return mag[p.row * c.n + p.col]; });
          expect_close(got, ref, scale, 1e-4,
                       name(type) + " mma " + std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n) +
                           (transposed ? " ABt" : " AB") + (in_place ? " in place" : ""));
        }
}
