#pragma once
// The tensor-core probes' types and shapes as the PTX ISA defines them (9.7.13 mma.sync,
// 9.7.15 wgmma): which input types, accumulators and N exist, how many FLOPs an instruction
// does, and host-side bit patterns for random operands and for reading accumulators back.
// Plain C++ (no CUDA, no fmt), so kernels' launchers and host tests include it alike.
#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace tkprobe::tensor {

enum class DType { bf16, fp16, tf32, e4m3, e5m2, s8 };
enum class Acc { f32, f16, s32 };
enum class ASource { smem, reg };

struct TypeInfo {
  DType dtype;
  std::string_view name;
  int bytes;                       // in memory (tf32 occupies a 32-bit word)
  int exp_bits, man_bits, bias;    // float formats; all 0 for s8
};

inline constexpr std::array<TypeInfo, 6> kTypes{{
    {DType::bf16, "bf16", 2, 8, 7, 127},
    {DType::fp16, "fp16", 2, 5, 10, 15},
    {DType::tf32, "tf32", 4, 8, 10, 127},
    {DType::e4m3, "e4m3", 1, 4, 3, 7},
    {DType::e5m2, "e5m2", 1, 5, 2, 15},
    {DType::s8, "s8", 1, 0, 0, 0},
}};

constexpr const TypeInfo& info(DType d) { return kTypes[static_cast<int>(d)]; }
std::optional<DType> parse_dtype(std::string_view name);
std::string_view name(Acc acc);
std::optional<Acc> parse_acc(std::string_view name);
std::string_view name(ASource a);

inline constexpr int kM = 64;                // wgmma's M is always 64
inline constexpr int kMmaSyncM = 16, kMmaSyncN = 8;
inline constexpr int kRowBytesPerK = 32;     // every shape here moves 32 bytes of K per row

constexpr int k_of(DType d) { return kRowBytesPerK / info(d).bytes; }

// N a multiple of 8 from 8 to 256; for s8 only 8, 16, 24 and then multiples of 16.
constexpr bool valid_wgmma_n(DType d, int n) {
  if (n < 8 || n > 256 || n % 8) return false;
  return d != DType::s8 || n <= 24 || n % 16 == 0;
}
std::vector<int> wgmma_ns(DType d);

// bf16 and tf32 accumulate in f32 only, fp16 and fp8 in f16 or f32, s8 in s32.
constexpr bool valid_acc(DType d, Acc a) {
  switch (d) {
    case DType::bf16:
    case DType::tf32:
      return a == Acc::f32;
    case DType::s8:
      return a == Acc::s32;
    default:
      return a != Acc::s32;
  }
}
constexpr Acc default_acc(DType d) { return d == DType::s8 ? Acc::s32 : Acc::f32; }
constexpr int acc_bytes(Acc a) { return a == Acc::f16 ? 2 : 4; }

constexpr double wgmma_flop(DType d, int n) { return 2.0 * kM * n * k_of(d); }
constexpr double mma_sync_flop(DType d) { return 2.0 * kMmaSyncM * kMmaSyncN * k_of(d); }
// mma.sync has no e5m2 row in the list of shapes, and wgmma has every type.
constexpr bool mma_sync_supports(DType d) { return d != DType::e5m2; }

// "64x256" -> {64, 256}; nullopt when it is not two positive integers joined by 'x'.
std::optional<std::pair<int, int>> parse_shape(std::string_view text);

// The dtype named by `text` among those `instruction` ("wgmma" or "mma.sync") takes; throws
// UsageError listing them otherwise.
DType require_dtype(std::string_view text, std::string_view instruction);

// Throw UsageError naming what is valid: M (always 64), N for the type, the accumulator.
void validate_wgmma(DType d, Acc acc, int m, int n);

// An operand element: its bit pattern as stored (low `bytes` bytes) and the exact value.
struct Element {
  std::uint32_t bits = 0;
  double value = 0;
};
// A random non-zero element: +-(1 + mantissa) * 2^e with e in [-3, 0] for float types (exactly
// representable, so no rounding rule enters the check), +-1..127 for s8.
Element random_element(DType d, std::mt19937_64& rng);
Element negate(DType d, Element e);
// The value an accumulator register part holds: f32, f16 (low 16 bits) or s32.
double accumulator_value(Acc a, std::uint32_t bits);

// A row-major matrix of elements.
struct Matrix {
  int rows = 0, cols = 0;
  std::vector<Element> at;
  Element& operator()(int r, int c) { return at[static_cast<std::size_t>(r) * cols + c]; }
  const Element& operator()(int r, int c) const { return at[static_cast<std::size_t>(r) * cols + c]; }
};
Matrix random_matrix(DType d, int rows, int cols, std::mt19937_64& rng);
Matrix negated(DType d, const Matrix& m);

// A (M x K) times B stored as N x K (both K-major, as the tensor cores read them): M x N, in double.
std::vector<double> reference_product(const Matrix& a, const Matrix& b_nk);
// ||got - want|| / ||want|| (Frobenius); infinity where a NaN took part.
double relative_error(const std::vector<double>& got, const std::vector<double>& want);

// The value of a bf16 bit pattern (the top half of an f32's).
double bf16_value(std::uint16_t bits);
// relative_error over two bf16 results (the GEMM's against cuBLASLt's); a poisoned element left
// unwritten (0xffff, a NaN) gives infinity.
double relative_error_bf16(const std::vector<std::uint16_t>& got, const std::vector<std::uint16_t>& want);

}  // namespace tkprobe::tensor
