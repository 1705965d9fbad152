#include "probes/measure/tensor_types.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <charconv>
#include <cmath>

#include "src/errors.hpp"

namespace tkprobe::tensor {

std::optional<DType> parse_dtype(std::string_view name) {
  for (const TypeInfo& t : kTypes) {
    if (t.name == name) return t.dtype;
  }
  return std::nullopt;
}

std::string_view name(Acc acc) {
  switch (acc) {
    case Acc::f32:
      return "f32";
    case Acc::f16:
      return "f16";
    default:
      return "s32";
  }
}

std::optional<Acc> parse_acc(std::string_view text) {
  for (Acc a : {Acc::f32, Acc::f16, Acc::s32}) {
    if (name(a) == text) return a;
  }
  return std::nullopt;
}

std::string_view name(ASource a) { return a == ASource::smem ? "smem" : "reg"; }

std::vector<int> wgmma_ns(DType d) {
  std::vector<int> ns;
  for (int n = 8; n <= 256; n += 8) {
    if (valid_wgmma_n(d, n)) ns.push_back(n);
  }
  return ns;
}

std::optional<std::pair<int, int>> parse_shape(std::string_view text) {
  const auto x = text.find('x');
  if (x == std::string_view::npos) return std::nullopt;
  const auto number = [](std::string_view s) -> std::optional<int> {
    int v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v <= 0) return std::nullopt;
    return v;
  };
  const auto m = number(text.substr(0, x)), n = number(text.substr(x + 1));
  if (!m || !n) return std::nullopt;
  return std::pair{*m, *n};
}

DType require_dtype(std::string_view text, std::string_view instruction) {
  const bool mma_sync = instruction == "mma.sync";
  const auto d = parse_dtype(text);
  if (d && (!mma_sync || mma_sync_supports(*d))) return *d;
  std::vector<std::string_view> valid;
  for (const TypeInfo& t : kTypes) {
    if (!mma_sync || mma_sync_supports(t.dtype)) valid.push_back(t.name);
  }
  throw UsageError(fmt::format("--dtype {}: {} takes {}", text, instruction, fmt::join(valid, ", ")));
}

void validate_wgmma(DType d, Acc acc, int m, int n) {
  const std::string_view type = info(d).name;
  if (m != kM) {
    throw UsageError(fmt::format("--shape {}x{}: wgmma's M is always 64 (PTX ISA 9.7.15); give 64xN", m, n));
  }
  if (!valid_wgmma_n(d, n)) {
    throw UsageError(fmt::format(
        "--shape 64x{}: N for {} must be {}", n, type,
        d == DType::s8 ? "8, 16, 24 or a multiple of 16 up to 256" : "a multiple of 8 from 8 to 256"));
  }
  if (!valid_acc(d, acc)) {
    const char* valid = d == DType::s8 ? "s32" : (d == DType::bf16 || d == DType::tf32) ? "f32" : "f32 or f16";
    throw UsageError(fmt::format("--acc {}: {} accumulates in {} only", name(acc), type, valid));
  }
}

Element random_element(DType d, std::mt19937_64& rng) {
  const TypeInfo& t = info(d);
  if (d == DType::s8) {
    const int magnitude = std::uniform_int_distribution<int>(1, 127)(rng);
    const int v = std::uniform_int_distribution<int>(0, 1)(rng) ? -magnitude : magnitude;
    return {static_cast<std::uint32_t>(v) & 0xffu, static_cast<double>(v)};
  }
  const int exponent = std::uniform_int_distribution<int>(-3, 0)(rng);
  const std::uint32_t mantissa = std::uniform_int_distribution<std::uint32_t>(0, (1u << t.man_bits) - 1)(rng);
  const std::uint32_t sign = std::uniform_int_distribution<std::uint32_t>(0, 1)(rng);
  std::uint32_t bits = sign << (t.exp_bits + t.man_bits) | std::uint32_t(exponent + t.bias) << t.man_bits | mantissa;
  if (d == DType::tf32) bits <<= 13;  // tf32 lives in the top 19 bits of an f32 word
  const double value = std::ldexp(1.0 + std::ldexp(double(mantissa), -t.man_bits), exponent);
  return {bits, sign ? -value : value};
}

Element negate(DType d, Element e) {
  if (d == DType::s8) return {static_cast<std::uint32_t>(-static_cast<std::int8_t>(e.bits)) & 0xffu, -e.value};
  return {e.bits ^ (1u << (8 * info(d).bytes - 1)), -e.value};
}

double accumulator_value(Acc a, std::uint32_t bits) {
  switch (a) {
    case Acc::f32:
      return std::bit_cast<float>(bits);
    case Acc::s32:
      return static_cast<std::int32_t>(bits);
    default: {  // IEEE half
      const std::uint32_t h = bits & 0xffffu, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
      const double sign = (h >> 15) ? -1.0 : 1.0;
      if (exp == 0x1f) return man ? std::nan("") : sign * INFINITY;
      if (exp == 0) return sign * std::ldexp(double(man), -24);
      return sign * std::ldexp(1.0 + std::ldexp(double(man), -10), int(exp) - 15);
    }
  }
}

Matrix random_matrix(DType d, int rows, int cols, std::mt19937_64& rng) {
  Matrix m{rows, cols, {}};
  m.at.resize(static_cast<std::size_t>(rows) * cols);
  for (Element& e : m.at) e = random_element(d, rng);
  return m;
}

Matrix negated(DType d, const Matrix& m) {
  Matrix n = m;
  for (Element& e : n.at) e = negate(d, e);
  return n;
}

std::vector<double> reference_product(const Matrix& a, const Matrix& b_nk) {
  std::vector<double> d(static_cast<std::size_t>(a.rows) * b_nk.rows);
  for (int i = 0; i < a.rows; ++i) {
    for (int j = 0; j < b_nk.rows; ++j) {
      double sum = 0;
      for (int k = 0; k < a.cols; ++k) sum += a(i, k).value * b_nk(j, k).value;
      d[static_cast<std::size_t>(i) * b_nk.rows + j] = sum;
    }
  }
  return d;
}

double relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return std::isnan(diff) ? INFINITY : std::sqrt(diff / norm);
}

double bf16_value(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t(bits) << 16); }

double relative_error_bf16(const std::vector<std::uint16_t>& got, const std::vector<std::uint16_t>& want) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double w = bf16_value(want[i]), d = bf16_value(got[i]) - w;
    diff += d * d;
    norm += w * w;
  }
  return std::isnan(diff) ? INFINITY : std::sqrt(diff / norm);
}

}  // namespace tkprobe::tensor
