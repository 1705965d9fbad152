// tma-swizzle: where the TMA really puts each element under each swizzle mode.
//
// Two tensors whose elements hold their own row and their own column are loaded, as one box,
// by cp.async.bulk.tensor into shared memory; reading the shared bytes back says where every
// (row, col) landed. The probe recovers the rule (which offset bits the hardware XORs with which),
// counts the elements the project's model (kernels/tk/layout/swizzle.hpp) puts elsewhere (must
// be 0), reports the span the pattern repeats over (the alignment a box needs), and asks the
// driver for a box one 16-byte chunk past the mode's limit to show what it refuses and how.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <map>

#include "kernels/tk/layout/swizzle.hpp"
#include "probes/measure/tensor_types.hpp"
#include "probes/timed_kernels/tma_kernels.hpp"
#include "probes/tma-swizzle/metrics.hpp"
#include "probes/tma-swizzle/swizzle_decode.hpp"
#include "src/device_buffer.hpp"
#include "src/errors.hpp"
#include "src/probe.hpp"

namespace metric = tkprobe::probe_metrics::tma_swizzle;  // this probe's metrics.json

namespace tkprobe {
namespace {

using tk::layout::Swizzle;
namespace sd = swizzle_decode;

struct Mode {
  const char* name;
  Swizzle model;
  CUtensorMapSwizzle driver;
  int span;  // bytes of a row the mode permutes; `none` has no limit but 16-byte multiples
};
constexpr Mode kModes[] = {{"none", Swizzle::none, CU_TENSOR_MAP_SWIZZLE_NONE, 128},
                           {"32B", Swizzle::b32, CU_TENSOR_MAP_SWIZZLE_32B, 32},
                           {"64B", Swizzle::b64, CU_TENSOR_MAP_SWIZZLE_64B, 64},
                           {"128B", Swizzle::b128, CU_TENSOR_MAP_SWIZZLE_128B, 128}};
const std::map<std::string, int> kElementBytes{{"fp8", 1}, {"bf16", 2}, {"fp32", 4}};
constexpr int kDefaultRows = 64;
constexpr int kMaxBoxDim = 256;  // cuTensorMapEncodeTiled's limit per dimension
constexpr int kChunk = 16;
constexpr int kLineBytes = 128;

class TmaSwizzle final : public Probe {
 public:
  std::string name() const override { return "tma-swizzle"; }
  std::string summary() const override {
    return "TMA swizzle modes decoded from the hardware: the XOR rule, mismatches vs the model (must be 0), limits";
  }
  Requirements needs() const override { return {.sm90a = {Sm90aFeature::tma}}; }
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--mode", mode_, "none, 32B, 64B, 128B or all (default all)");
    cmd.add_option("--dtype", dtype_, "Element type: bf16, fp32 or fp8 (default bf16)");
    cmd.add_option("--box", box_, "ROWSxCOLS in elements (default 64 rows x the mode's span)");
    cmd.add_flag("--show", show_, "Print each 128-byte line of the box as the 16-byte chunks that landed there");
  }
  void validate() const override {
    if (!kElementBytes.count(dtype_)) throw UsageError(fmt::format("--dtype {}: give bf16, fp32 or fp8", dtype_));
    if (modes().empty()) throw UsageError(fmt::format("--mode {}: give none, 32B, 64B, 128B or all", mode_));
    for (const Mode& m : modes()) box_for(m);
  }

  void run(ProbeContext& ctx) override {
    for (const Mode& m : modes()) decode(ctx, m, box_for(m));
  }

 private:
  std::string mode_ = "all";
  std::string dtype_ = "bf16";
  std::string box_;
  bool show_ = false;

  int element_bytes() const { return kElementBytes.at(dtype_); }

  std::vector<Mode> modes() const {
    std::vector<Mode> out;
    for (const Mode& m : kModes) {
      if (mode_ == "all" || mode_ == m.name) out.push_back(m);
    }
    return out;
  }

  // The box for a mode; throws UsageError for one the TMA refuses (PTX ISA / CUDA driver limits).
  tma::Box box_for(const Mode& m) const {
    tma::Box box{kDefaultRows, m.span / element_bytes()};
    if (!box_.empty()) {
      const auto shape = tensor::parse_shape(box_);
      if (!shape || shape->first > kMaxBoxDim || shape->second > kMaxBoxDim) {
        throw UsageError(fmt::format("--box {}: give ROWSxCOLS, each 1..{}", box_, kMaxBoxDim));
      }
      box = {shape->first, shape->second};
    }
    const int inner = box.cols * element_bytes();
    if (inner % kChunk) {
      throw UsageError(fmt::format("--box {}x{}: the inner extent ({} B) must be a multiple of 16 bytes", box.rows,
                                   box.cols, inner));
    }
    if (m.model != Swizzle::none && inner > m.span) {
      throw UsageError(fmt::format("--box {}x{}: {} swizzle needs the inner extent ({} x {} B = {} B) <= {} B", box.rows,
                                   box.cols, m.name, box.cols, element_bytes(), inner, m.span));
    }
    return box;
  }

  // Bytes of shared memory read back per box row: room for any padding the TMA adds (a row
  // never takes more than the larger of its own bytes and a 128-byte line).
  int region_row_bytes(tma::Box box) const { return std::max(box.cols * element_bytes(), kLineBytes); }

  // Loads a tensor whose every element holds code(row, col) and returns the code in every
  // element-sized slot of the shared region (poison where the TMA wrote nothing).
  std::vector<std::uint32_t> load(ProbeContext& ctx, const Mode& m, tma::Box box, bool code_rows) {
    const int bytes = box.rows * box.cols * element_bytes(), region = box.rows * region_row_bytes(box);
    std::vector<std::uint8_t> host(bytes);
    for (int r = 0; r < box.rows; ++r)
      for (int c = 0; c < box.cols; ++c)
        for (int b = 0; b < element_bytes(); ++b) {
          host[(r * box.cols + c) * element_bytes() + b] = static_cast<std::uint8_t>((code_rows ? r : c) >> (8 * b));
        }
    DeviceBuffer<std::uint8_t> global(bytes), out(region);
    global.upload(host);
    out.poison();
    CUtensorMap map;
    const CUresult encoded = tma::encode_map(&map, global.get(), element_bytes(), box, m.driver);
    if (encoded != CUDA_SUCCESS) {
      throw CudaError(fmt::format("cuTensorMapEncodeTiled refused a valid {} box: {}", m.name, tma::result_name(encoded)));
    }
    tma::load_box(map, bytes, region, out.get(), ctx.harness.stream());
    const auto landed = out.download();
    std::vector<std::uint32_t> codes(region / element_bytes());
    for (std::size_t e = 0; e < codes.size(); ++e)
      for (int b = 0; b < element_bytes(); ++b) codes[e] |= std::uint32_t(landed[e * element_bytes() + b]) << (8 * b);
    return codes;
  }

  // What the driver says to a box one 16-byte chunk wider than the mode allows.
  std::string limit(const Mode& m, tma::Box box) const {
    const int inner = m.model == Swizzle::none ? kChunk / 2 : m.span + kChunk;  // none: not a 16-byte multiple
    const tma::Box over{box.rows, std::max(1, inner / element_bytes())};
    DeviceBuffer<std::uint8_t> global(std::size_t(over.rows) * kMaxBoxDim * 4);
    CUtensorMap map;
    const CUresult r = tma::encode_map(&map, global.get(), element_bytes(), over, m.driver);
    return fmt::format("inner extent {} B: {}", over.cols * element_bytes(),
                       r == CUDA_SUCCESS ? "accepted" : tma::result_name(r));
  }

  // An element of the box and the byte of the shared region it landed at.
  struct Landing {
    std::uint32_t row, col, placed;
  };

  // The row pitch for which every element sits at swizzle(row x pitch + col x size): the
  // packed width, the mode's span or a whole line; 0 when none fits.
  std::uint32_t recover_pitch(const std::vector<Landing>& landed, const Mode& m, tma::Box box) const {
    const auto inner = std::uint32_t(box.cols * element_bytes());
    for (std::uint32_t pitch : {inner, std::uint32_t(m.span), std::uint32_t(kLineBytes)}) {
      if (pitch < inner) continue;
      const bool fits = std::all_of(landed.begin(), landed.end(), [&](const Landing& l) {
        return tk::layout::swizzle(l.row * pitch + l.col * element_bytes(), m.model) == l.placed;
      });
      if (fits) return pitch;
    }
    return 0;
  }

  void decode(ProbeContext& ctx, const Mode& m, tma::Box box) {
    const auto rows = load(ctx, m, box, true), cols = load(ctx, m, box, false);
    const int eb = element_bytes(), inner = box.cols * eb;
    const std::uint32_t pitch = tk::layout::tma_row_pitch(inner, m.model);
    std::vector<Landing> landed;
    std::vector<int> seen(std::size_t(box.rows) * box.cols, 0);
    const int per_chunk = kChunk / eb, chunks_per_row = inner / kChunk;
    std::vector<Json> placed_chunk(std::size_t(box.rows) * chunks_per_row);  // null: nothing landed
    int mismatches = 0;
    for (std::size_t e = 0; e < rows.size(); ++e) {
      if (rows[e] >= std::uint32_t(box.rows) || cols[e] >= std::uint32_t(box.cols)) continue;  // left alone
      const Landing l{rows[e], cols[e], std::uint32_t(e * eb)};
      landed.push_back(l);
      seen[l.row * box.cols + l.col]++;
      mismatches += tk::layout::swizzle(l.row * pitch + l.col * eb, m.model) != l.placed;
      if (l.col % per_chunk == 0) placed_chunk[l.row * chunks_per_row + l.col / per_chunk] = l.placed / kChunk;
    }
    const int missing = int(std::count(seen.begin(), seen.end(), 0));
    const int repeated = int(std::count_if(seen.begin(), seen.end(), [](int n) { return n > 1; }));
    const std::uint32_t measured_pitch = recover_pitch(landed, m, box);
    std::vector<sd::Placement> placements;
    for (const Landing& l : landed) placements.push_back({l.row * (measured_pitch ? measured_pitch : pitch) + l.col * eb, l.placed});
    const auto rule = sd::recover_xor_rule(placements);
    int repeat = int(pitch);  // the span after which the pattern repeats: 2^(highest source bit + 1)
    if (rule && !rule->empty()) repeat = 1 << (rule->back().source + 1);

    Result r(name(), {{"mode", m.name}, {"dtype", dtype_}, {"box", fmt::format("{}x{}", box.rows, box.cols)}});
    r.value(metric::rule, rule ? sd::describe(*rule) : "not an XOR of offset bits");
    r.value(metric::mismatches_vs_model, mismatches);
    r.value(metric::elements, Json(seen.size()));
    r.value(metric::row_pitch_bytes, measured_pitch ? Json(measured_pitch) : Json(nullptr));
    r.value(metric::model_row_pitch_bytes, pitch);
    r.value(metric::pattern_repeat_bytes, repeat);
    r.value(metric::driver_limit, limit(m, box));
    r.checked({{"what", "every element where kernels/tk/layout/swizzle.hpp puts it (rows tma_row_pitch apart), once"},
               {"mismatches", mismatches},
               {"missing", missing},
               {"repeated", repeated},
               {"placement",  // where each 16-byte chunk of the box landed, by its first element
                {{"rows", box.rows},
                 {"chunks_per_row", chunks_per_row},
                 {"chunk_bytes", kChunk},
                 {"placed_chunk", placed_chunk}}}},
              mismatches == 0 && missing == 0 && repeated == 0);
    ctx.add(std::move(r));
    const std::string padding =
        measured_pitch > std::uint32_t(inner) ? fmt::format(", each padded to {} B in shared memory", measured_pitch) : "";
    ctx.finding(name(), fmt::format("{} ({} {}x{} box, {} B rows{}): {}; {} of {} elements off the model; the pattern "
                                    "repeats every {} bytes, so a box needs that alignment",
                                    m.name, dtype_, box.rows, box.cols, inner, padding,
                                    rule ? sd::describe(*rule) : "not an XOR rule", mismatches, seen.size(), repeat));
    if (show_) ctx.finding(name(), grid(m, box, rows, cols));
  }

  // Each 128-byte line of shared memory as the (row, 16-byte chunk) of the box that landed there.
  std::string grid(const Mode& m, tma::Box box, const std::vector<std::uint32_t>& rows,
                   const std::vector<std::uint32_t>& cols) const {
    const int per_chunk = kChunk / element_bytes(), chunks = int(rows.size()) / per_chunk;
    constexpr int kChunksPerLine = 8;
    std::string text =
        fmt::format("{} mode, shared memory by 128-byte line (entries: row.chunk of the box, -- untouched):", m.name);
    for (int c = 0; c < chunks && c < 8 * kChunksPerLine; ++c) {
      if (c % kChunksPerLine == 0) text += fmt::format("\n      line {:2}:", c / kChunksPerLine);
      const std::size_t e = std::size_t(c) * per_chunk;
      text += rows[e] < std::uint32_t(box.rows) ? fmt::format(" {:>2}.{}", rows[e], cols[e] / per_chunk)
                                                : std::string("   --");
    }
    return text;
  }
};

}  // namespace

TKPROBE_REGISTER_PROBE(TmaSwizzle);

}  // namespace tkprobe
