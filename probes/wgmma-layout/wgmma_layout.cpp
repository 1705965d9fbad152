// wgmma-layout: what wgmma really reads from shared memory, and where its results land.
//
// One wgmma m64n128k16 (bf16 -> f32) at a time, with one operand made of codes and the other an
// identity, so each accumulator equals one code: the code says which shared-memory element
// (or which register of A) fed that (row, k) of A or (k, col) of B. Codes are element indices,
// sent as two base-256 digits in two launches (bf16 holds integers up to 256 exactly). A third
// decode multiplies rows by coded columns to recover which thread and register hold each
// accumulator. Every recovered map is compared with the project's model
// (kernels/tk/layout/wgmma_descriptor.hpp and fragments.hpp); the bar is 0 mismatches.
//
// The operand maps are read through the accumulator map and the identity through the other
// operand's map, so each decode assumes the others; all of them agreeing (0 mismatches and no
// stray products) is what proves the set. Rows, columns and k are named as the PTX ISA names
// them for the A-register fragment and the accumulators.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <bit>
#include <cstring>

#include "kernels/tk/layout/fragments.hpp"
#include "kernels/tk/layout/wgmma_descriptor.hpp"
#include "probes/wgmma-layout/metrics.hpp"
#include "probes/wgmma-layout/wgmma_layout_kernels.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::wgmma_layout;  // this probe's metrics.json

namespace tkprobe {
namespace {

namespace wl = wgmma_layout;
using tk::layout::Major;
using tk::layout::SmemOperand;
using tk::layout::Swizzle;

constexpr int kElemBytes = 2;      // bf16
constexpr int kDigitBase = 256;    // largest integer range bf16 holds exactly
constexpr int kDigits = 2;         // element indices below 65536: regions up to 128 KiB
constexpr int kLineBytes = 128;    // the swizzle's row unit
constexpr int kMaxMismatchesListed = 32;

struct Mode {
  const char* name;
  Swizzle swizzle;
};
constexpr Mode kModes[] = {{"none", Swizzle::none}, {"32B", Swizzle::b32}, {"64B", Swizzle::b64}, {"128B", Swizzle::b128}};

// bf16 bits of a small integer (exact for the values used here: <= 256, or n x 64 for n < 128).
std::uint16_t bf16_bits(float v) { return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(v) >> 16); }

const char* major_name(Major m) { return m == Major::k ? "k" : "mn"; }

// One operand's shared-memory region: its descriptor fields and the bytes it holds.
struct Operand {
  SmemOperand layout;
  std::uint32_t start = 0;        // start address, relative to the region (1024-byte aligned)
  std::uint32_t base_offset = 0;  // descriptor bits 49-51
  int mn_extent = 0;              // 64 rows of A or 128 columns of B; K is always 16
  bool spread = false;            // strides doubled from the packed ones

  std::uint32_t address(int mn, int k) const {
    return tk::layout::operand_address(start, layout, mn, k, kElemBytes, base_offset);
  }
  int region_bytes() const {
    std::uint32_t end = 0;
    for (int mn = 0; mn < mn_extent; ++mn)
      for (int k = 0; k < wl::kK; ++k) end = std::max(end, address(mn, k) + kElemBytes);
    return int((end + wl::kRegionAlign - 1) / wl::kRegionAlign * wl::kRegionAlign);
  }
  std::uint64_t descriptor() const { return tk::layout::wgmma_descriptor(start, layout, base_offset); }
};

// A region filled with f(element index) at every element, or zeros with `ones` at given places.
std::vector<std::uint8_t> coded_region(const Operand& op, int digit) {
  std::vector<std::uint8_t> bytes(op.region_bytes());
  for (std::size_t e = 0; e < bytes.size() / kElemBytes; ++e) {
    int code = int(e);
    for (int d = 0; d < digit; ++d) code /= kDigitBase;
    const std::uint16_t v = bf16_bits(float(code % kDigitBase));
    std::memcpy(&bytes[e * kElemBytes], &v, kElemBytes);
  }
  return bytes;
}

// value(mn, k) at the model's address of every (mn, k); zero elsewhere.
template <class F>
std::vector<std::uint8_t> placed_region(const Operand& op, F value) {
  std::vector<std::uint8_t> bytes(op.region_bytes());
  for (int mn = 0; mn < op.mn_extent; ++mn)
    for (int k = 0; k < wl::kK; ++k) {
      const std::uint16_t v = bf16_bits(value(mn, k));
      std::memcpy(&bytes[op.address(mn, k)], &v, kElemBytes);
    }
  return bytes;
}

std::vector<std::uint8_t> identity(const Operand& op) {
  return placed_region(op, [](int mn, int k) { return mn == k ? 1.0f : 0.0f; });
}

// The accumulators of one wgmma, as [thread][register], and as D[m][n] through the model.
struct Product {
  std::vector<float> registers;
  float d(int m, int n) const { return at[m * wl::kN + n]; }
  std::vector<float> at = std::vector<float>(wl::kM * wl::kN);
};

Product multiply(ProbeContext& ctx, wl::Form form, const Operand& a, const std::vector<std::uint8_t>& a_bytes,
                 const Operand& b, const std::vector<std::uint8_t>& b_bytes,
                 const std::vector<std::uint32_t>& a_registers = {}) {
  DeviceBuffer<std::uint8_t> a_image(std::max<std::size_t>(a_bytes.size(), 16)), b_image(b_bytes.size());
  if (!a_bytes.empty()) a_image.upload(a_bytes);
  b_image.upload(b_bytes);
  DeviceBuffer<std::uint32_t> regs(wl::kThreads * wl::kARegs);
  if (!a_registers.empty()) regs.upload(a_registers);
  DeviceBuffer<float> out(wl::kThreads * wl::kAccRegs);
  out.poison();
  wl::Params p{a_image.get(), int(a_bytes.size()), b_image.get(), int(b_bytes.size()),
               a.descriptor(),  b.descriptor(),    regs.get(),    out.get()};
  wl::run(form, p, ctx.harness.stream());
  Product prod{out.download()};
  for (int t = 0; t < wl::kThreads; ++t)
    for (int v = 0; v < wl::kAccRegs; ++v) {
      const auto c = tk::layout::accumulator(t, v);
      prod.at[c.row * wl::kN + c.col] = prod.registers[t * wl::kAccRegs + v];
    }
  return prod;
}

// What a decode found: for each (mn, k) the element (or register) that fed it, and products
// that should have been zero and were not (reads the model did not predict).
struct Decoded {
  std::vector<std::uint32_t> source;  // [mn][k]
  int strays = 0;
};

// Adds one digit's products to `out`: D(row, col) = digit of the source of `at(row, col)`.
template <class Source, class Stray>
void add_digit(Decoded& out, const Product& prod, int digit, int mn_extent, Source source_of, Stray is_stray) {
  int scale = 1;
  for (int d = 0; d < digit; ++d) scale *= kDigitBase;
  for (int m = 0; m < wl::kM; ++m)
    for (int n = 0; n < wl::kN; ++n) {
      const float v = prod.d(m, n);
      if (is_stray(m, n)) {
        out.strays += v != 0.0f;
      } else if (auto idx = source_of(m, n); idx.first < mn_extent) {
        out.source[idx.first * wl::kK + idx.second] += std::uint32_t(v) * scale;
      }
    }
}

class WgmmaLayout final : public Probe {
 public:
  std::string name() const override { return "wgmma-layout"; }
  std::string summary() const override {
    return "What wgmma reads from shared memory (descriptor, LBO/SBO, swizzle) and where accumulators land, vs the model";
  }
  Requirements needs() const override { return {.sm90a = {Sm90aFeature::wgmma}}; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--swizzle", swizzle_, "none, 32B, 64B, 128B or all (default all)");
    cmd.add_option("--major", major_, "k, mn or all (default all): K-major or MN-major (transposed) operands");
    cmd.add_option("--dtype", dtype_, "Element type: bf16 (the only one decoded)");
    cmd.add_flag("--show", show_, "Print, per mode, the shared-memory chunk each 8-element piece of A's rows 0-15 came from");
  }
  void validate() const override {
    if (dtype_ != "bf16") throw UsageError(fmt::format("--dtype {}: only bf16 is decoded", dtype_));
    if (modes().empty()) throw UsageError(fmt::format("--swizzle {}: give none, 32B, 64B, 128B or all", swizzle_));
    if (majors().empty()) throw UsageError(fmt::format("--major {}: give k, mn or all", major_));
  }

  void run(ProbeContext& ctx) override {
    decode_accumulators(ctx);
    for (Major major : majors()) decode_a_registers(ctx, major);
    for (Major major : majors())
      for (const Mode& m : modes()) {
        for (bool spread : {false, true}) {
          decode_smem(ctx, 'A', operand_a(major, m.swizzle, spread), m.name);
          decode_smem(ctx, 'B', operand_b(major, m.swizzle, spread), m.name);
        }
      }
    if (wants(Major::k) && wants_mode("128B")) decode_base_offsets(ctx);
  }

 private:
  std::string swizzle_ = "all", major_ = "all", dtype_ = "bf16";
  bool show_ = false;

  bool wants_mode(const std::string& name) const { return swizzle_ == "all" || swizzle_ == name; }
  bool wants(Major m) const { return major_ == "all" || major_ == major_name(m); }
  std::vector<Mode> modes() const {
    std::vector<Mode> out;
    for (const Mode& m : kModes)
      if (wants_mode(m.name)) out.push_back(m);
    return out;
  }
  std::vector<Major> majors() const {
    std::vector<Major> out;
    for (Major m : {Major::k, Major::mn})
      if (wants(m)) out.push_back(m);
    return out;
  }

  // Packed strides, or "spread": both strides doubled, so a wrong idea of which stride steps
  // which dimension (or a stride the hardware ignores) shows as misplaced elements.
  static Operand operand(Major major, Swizzle mode, int mn_extent, bool spread) {
    SmemOperand layout = tk::layout::packed_operand(major, mode, mn_extent, wl::kK);
    if (spread) {
      layout.lbo *= 2;
      layout.sbo *= 2;
    }
    return {layout, 0, 0, mn_extent, spread};
  }
  static Operand operand_a(Major major, Swizzle mode, bool spread = false) { return operand(major, mode, wl::kM, spread); }
  static Operand operand_b(Major major, Swizzle mode, bool spread = false) { return operand(major, mode, wl::kN, spread); }

  // Which shared-memory element fed each (mn, k) of operand `which` ('A' or 'B'): the other
  // operand is the identity, so D(m, n) = A(m, n) for n < 16, or B(k = m, n) for m < 16.
  Decoded decode_sources(ProbeContext& ctx, char which, const Operand& op) {
    const Major major = op.layout.major;
    const wl::Form form{false, major == Major::mn};
    const bool is_a = which == 'A';
    const Operand other = is_a ? operand_b(major, op.layout.swizzle) : operand_a(major, op.layout.swizzle);
    Decoded out{std::vector<std::uint32_t>(op.mn_extent * wl::kK)};
    for (int digit = 0; digit < kDigits; ++digit) {
      const auto coded = coded_region(op, digit);
      const Product prod = is_a ? multiply(ctx, form, op, coded, other, identity(other))
                                : multiply(ctx, form, other, identity(other), op, coded);
      add_digit(
          out, prod, digit, op.mn_extent,
          [&](int m, int n) { return is_a ? std::pair{m, n} : std::pair{n, m}; },
          [&](int m, int n) { return is_a ? n >= wl::kK : m >= wl::kK; });
    }
    for (auto& s : out.source) s *= kElemBytes;  // element index -> byte offset in the region
    return out;
  }

  void decode_smem(ProbeContext& ctx, char which, const Operand& op, const char* mode_name) {
    const Decoded got = decode_sources(ctx, which, op);
    ctx.add(smem_row(which, op, mode_name, got));
    ctx.finding(name(), fmt::format("{} {}-major {} ({} strides: LBO {} B, SBO {} B): {} of {} elements off the model, "
                                    "{} stray products",
                                    which, major_name(op.layout.major), mode_name, op.spread ? "spread" : "packed",
                                    op.layout.lbo, op.layout.sbo, mismatches(op, got).size(), op.mn_extent * wl::kK,
                                    got.strays));
    if (show_ && which == 'A' && !op.spread) ctx.finding(name(), grid(op, got, mode_name));
  }

  // The (mn, k) read from somewhere other than where the model says, each as {mn, k, read, model}.
  static std::vector<Json> mismatches(const Operand& op, const Decoded& got) {
    std::vector<Json> out;
    for (int mn = 0; mn < op.mn_extent; ++mn)
      for (int k = 0; k < wl::kK; ++k) {
        const std::uint32_t read = got.source[mn * wl::kK + k], model = op.address(mn, k);
        if (read != model) out.push_back({{"mn", mn}, {"k", k}, {"read", read}, {"model", model}});
      }
    return out;
  }

  Result smem_row(char which, const Operand& op, const char* mode_name, const Decoded& got) const {
    const std::vector<Json> off = mismatches(op, got);
    Result r(name(), {{"operand", std::string(1, which)},
                      {"source", "smem"},
                      {"major", major_name(op.layout.major)},
                      {"swizzle", mode_name},
                      {"strides", op.spread ? "spread" : "packed"},
                      {"lbo", op.layout.lbo},
                      {"sbo", op.layout.sbo},
                      {"start", op.start},
                      {"base_offset", op.base_offset}});
    r.value(metric::mismatches_vs_model, off.size());
    r.value(metric::stray_products, got.strays);
    r.value(metric::elements, op.mn_extent * wl::kK);
    r.value(metric::region_bytes, op.region_bytes());
    const auto listed = std::min<std::size_t>(off.size(), kMaxMismatchesListed);
    r.checked({{"what", "every (mn, k) read from the address kernels/tk/layout/wgmma_descriptor.hpp gives, nothing else read"},
               {"mismatches", off.size()},
               {"strays", got.strays},
               {"first_mismatches", std::vector<Json>(off.begin(), off.begin() + listed)}},
              off.empty() && got.strays == 0);
    return r;
  }

  // A's rows 0-15 as the shared-memory (128-byte line).(16-byte chunk) each 8-element piece came from.
  static std::string grid(const Operand& op, const Decoded& got, const char* mode_name) {
    constexpr int kRowsShown = 16, kPerChunk = 16 / kElemBytes;
    std::string text = fmt::format("A {}-major {}: line.chunk read for k 0-7 | k 8-15", major_name(op.layout.major), mode_name);
    for (int m = 0; m < kRowsShown; ++m) {
      text += fmt::format("\n      row {:2}:", m);
      for (int k = 0; k < wl::kK; k += kPerChunk) {
        const std::uint32_t at = got.source[m * wl::kK + k];
        text += fmt::format(" {:>3}.{}", at / kLineBytes, at % kLineBytes / 16);
      }
    }
    return text;
  }

  // Thread t, register v holds D(m, n): A(m, 0) = m and A(m, 1) = 1 against B(0, n) = 1 and
  // B(1, n) = 64 n make every accumulator m + 64 n, exact in f32.
  void decode_accumulators(ProbeContext& ctx) {
    const Operand a = operand_a(Major::k, Swizzle::b128), b = operand_b(Major::k, Swizzle::b128);
    const auto a_bytes = placed_region(a, [](int m, int k) { return k == 0 ? float(m) : k == 1 ? 1.0f : 0.0f; });
    const auto b_bytes = placed_region(b, [](int n, int k) { return k == 0 ? 1.0f : k == 1 ? 64.0f * n : 0.0f; });
    const Product prod = multiply(ctx, {false, false}, a, a_bytes, b, b_bytes);
    int mismatches = 0;
    for (int t = 0; t < wl::kThreads; ++t)
      for (int v = 0; v < wl::kAccRegs; ++v) {
        const auto code = static_cast<int>(prod.registers[t * wl::kAccRegs + v]);
        mismatches += tk::layout::Coord{code % wl::kM, code / wl::kM} != tk::layout::accumulator(t, v);
      }
    Result r(name(), {{"operand", "D"}, {"source", "accumulators"}, {"shape", "m64n128k16"}});
    r.value(metric::mismatches_vs_model, mismatches);
    r.value(metric::elements, wl::kM * wl::kN);
    r.checked({{"what", "thread t, register v holds D(16 (t/32) + (t%32)/4 + 8 ((v%4)/2), 8 (v/4) + 2 (t%4) + v%2)"},
               {"mismatches", mismatches}},
              mismatches == 0);
    ctx.add(std::move(r));
    ctx.finding(name(), fmt::format("accumulators: thread t, register v holds D(16*(t/32) + (t%32)/4 + 8*((v%4)/2), "
                                    "8*(v/4) + 2*(t%4) + v%2) (fragments.hpp); {} of {} off",
                                    mismatches, wl::kM * wl::kN));
  }

  // A from registers: each register half carries the code 8 t + 2 r + h of (thread, register,
  // half); B is the identity, so D(m, k) names the register half that holds A(m, k).
  void decode_a_registers(ProbeContext& ctx, Major b_major) {
    const Operand b = operand_b(b_major, Swizzle::b128);
    Decoded got{std::vector<std::uint32_t>(wl::kM * wl::kK)};
    for (int digit = 0; digit < kDigits; ++digit) {
      std::vector<std::uint32_t> regs(wl::kThreads * wl::kARegs);
      for (std::size_t i = 0; i < regs.size(); ++i) {
        const auto half = [&](std::uint32_t code) {
          for (int d = 0; d < digit; ++d) code /= kDigitBase;
          return std::uint32_t(bf16_bits(float(code % kDigitBase)));
        };
        regs[i] = half(2 * i) | half(2 * i + 1) << 16;
      }
      const Product prod = multiply(ctx, {true, b_major == Major::mn}, Operand{}, {}, b, identity(b), regs);
      add_digit(got, prod, digit, wl::kM, [](int m, int n) { return std::pair{m, n}; },
                [](int, int n) { return n >= wl::kK; });
    }
    int mismatches = 0;
    for (int m = 0; m < wl::kM; ++m)
      for (int k = 0; k < wl::kK; ++k) {
        const std::uint32_t code = got.source[m * wl::kK + k];
        const int thread = int(code / (2 * wl::kARegs)), reg = int(code / 2 % wl::kARegs), half = int(code % 2);
        const auto c = tk::layout::a_fragment(thread % 32, reg, half, kElemBytes);
        mismatches += tk::layout::Coord{16 * (thread / 32) + c.row, c.col} != tk::layout::Coord{m, k};
      }
    Result r(name(), {{"operand", "A"}, {"source", "registers"}, {"major", major_name(b_major)}});
    r.value(metric::mismatches_vs_model, mismatches);
    r.value(metric::stray_products, got.strays);
    r.value(metric::elements, wl::kM * wl::kK);
    r.checked({{"what", "A(m, k) from the register half fragments.hpp's a_fragment names (warp w: rows 16w..16w+15)"},
               {"mismatches", mismatches},
               {"strays", got.strays}},
              mismatches == 0 && got.strays == 0);
    ctx.add(std::move(r));
    ctx.finding(name(), fmt::format("A from registers (B {}-major): {} of {} elements off a_fragment, {} stray products",
                                    major_name(b_major), mismatches, wl::kM * wl::kK, got.strays));
  }

  // A 128B-swizzled A whose start sits r lines past the 1024-byte repeat, with the descriptor's
  // base offset 0 and r (the PTX ISA asks for (start >> 7) & 7 there). The model subtracts the
  // base offset from the line index before the XOR; the shift (in lines) that fits what was
  // read is reported beside it.
  void decode_base_offsets(ProbeContext& ctx) {
    constexpr int kLinesPerRepeat = 8;
    for (int r = 1; r < kLinesPerRepeat; ++r)
      for (std::uint32_t base_offset : {0u, std::uint32_t(r)}) {
        Operand a = operand_a(Major::k, Swizzle::b128);
        a.start = std::uint32_t(r) * kLineBytes;
        a.base_offset = base_offset;
        const Decoded got = decode_sources(ctx, 'A', a);
        const int fits = phase_shift(a, got, kLinesPerRepeat);
        Result row = smem_row('A', a, "128B", got);
        row.value(metric::phase_shift_lines, fits < kLinesPerRepeat ? Json(fits) : Json(nullptr));
        ctx.add(std::move(row));
        ctx.finding(name(),
                    fmt::format("A K-major 128B starting {} B past the 1024-byte repeat, base offset {}: {} of {} off "
                                "the model; the XOR used line - {}",
                                a.start, base_offset, mismatches(a, got).size(), wl::kM * wl::kK,
                                fits < kLinesPerRepeat ? fmt::format("{}", (kLinesPerRepeat - fits) % kLinesPerRepeat)
                                                       : std::string("? (no shift fits)")));
      }
  }

  // The line shift s for which every read address is the linear one XORed with (line + s) mod 8.
  static int phase_shift(const Operand& a, const Decoded& got, int lines) {
    for (int s = 0; s < lines; ++s) {
      bool fits = true;
      for (int m = 0; m < wl::kM && fits; ++m)
        for (int k = 0; k < wl::kK && fits; ++k) {
          const std::uint32_t linear = a.start + tk::layout::canonical_offset(a.layout, m, k, kElemBytes);
          fits = got.source[m * wl::kK + k] == (linear ^ ((((linear / kLineBytes) + s) % lines) << 4));
        }
      if (fits) return s;
    }
    return lines;
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(WgmmaLayout);

}  // namespace tkprobe
