#include "src/roofline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "src/device.hpp"
#include "src/errors.hpp"

namespace tkprobe::roofline {
namespace {

constexpr const char* kTime = "gpu__time_duration.sum";          // nanoseconds
constexpr const char* kClock = "sm__cycles_elapsed.avg.per_second";  // the SM clock, cycles per second
constexpr const char* kDramRead = "dram__bytes_read.sum";
constexpr const char* kDramWrite = "dram__bytes_write.sum";
constexpr const char* kL2 = "lts__t_bytes.sum";
// Shared-memory wavefronts through the LSU data pipe: 128 bytes each, a bank conflict's replays counted.
constexpr const char* kSmemWavefronts = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum";
constexpr double kWavefrontBytes = 128;
// The bytes shared-memory instructions asked for: wavefront bytes over these is the conflict degree.
constexpr const char* kSmemRequested = "smsp__sass_data_bytes_mem_shared.sum";
constexpr const char* kFfma = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
constexpr const char* kFadd = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum";
constexpr const char* kFmul = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum";
constexpr const char* kMufuWarpInstructions = "sm__inst_executed_pipe_xu.sum";
constexpr const char* kInteger = "smsp__sass_thread_inst_executed_op_integer_pred_on.sum";
constexpr double kThreadsPerWarp = 32;
constexpr const char* kGpuName = "device__attribute_display_name";

// Tensor-pipe operations by input type (ncu's ops_path metrics), and the tensor-cores probe's dtype
// whose measured rate bounds them.
struct TensorPath {
  const char* type;
  const char* metric;
  const char* probe_dtype;
  bool optional;  // ncu on gh100 has no fp16 paths: a profile may lack them
};
constexpr TensorPath kTensorPaths[] = {
    {"bf16", "sm__ops_path_tensor_src_bf16_dst_fp32.sum", "bf16", false},
    {"fp16", "sm__ops_path_tensor_src_fp16_dst_fp32.sum", "fp16", true},
    {"fp16", "sm__ops_path_tensor_src_fp16_dst_fp16.sum", "fp16", true},
    {"tf32", "sm__ops_path_tensor_src_tf32_dst_fp32.sum", "tf32", false},
    {"fp8", "sm__ops_path_tensor_src_fp8.sum", "e4m3", false},
    {"int8", "sm__ops_path_tensor_src_int8.sum", "s8", false},
};

// Documented per-SM rates where no probe measures one (NVIDIA H100 whitepaper: 128 FP32 lanes, 64
// INT32 lanes and 16 special-function units per SM).
constexpr double kFp32FlopPerClockPerSm = 2 * 128;
constexpr double kInt32PerClockPerSm = 64;
constexpr double kMufuPerClockPerSm = 16;

// The overlap probe's reference wgmma: bf16 m64n256k16 by one warpgroup.
constexpr double kWgmmaFlops = 2.0 * 64 * 256 * 16;
constexpr double kWarpgroupThreads = 128;
constexpr int kOverlapWarpgroups = 2;
// The overlap probe's rows move about half a percent from run to run: a ceiling less than 1% under the
// tensor one is that noise (a GEMM's few epilogue instructions), not a cost of the filler.
constexpr double kOverlapShownBelowPct = 99;  // the rows a kernel with two consumer warpgroups matches

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted && ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      cell += '"';
      ++i;
    } else if (ch == '"') {
      quoted = !quoted;
    } else if (ch == ',' && !quoted) {
      cells.push_back(std::move(cell));
      cell.clear();
    } else {
      cell += ch;
    }
  }
  cells.push_back(std::move(cell));
  return cells;
}

// A counter as ncu prints it in base units, thousands separated by commas.
double number(std::string text, const std::string& where) {
  text.erase(std::remove(text.begin(), text.end(), ','), text.end());
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v)) {
    throw UsageError(fmt::format("{}: '{}' is not a number", where, text));
  }
  return v;
}

const Json* find_row(const Json& report, std::string_view probe, const std::function<bool(const Json&)>& pick) {
  const Json* found = nullptr;
  for (const Json& r : report["results"]) {
    if (r.value("probe", "") == probe && r.value("status", "") == "ok" && pick(r)) found = &r;
  }
  return found;
}

// A metric's median (a measurement) or value (a plain figure); NaN when absent.
double figure(const Json& row, const std::string& metric) {
  if (!row["metrics"].contains(metric)) return std::nan("");
  const Json& m = row["metrics"][metric];
  if (m.is_object()) return m.value("median", std::nan(""));
  return m.is_number() ? m.get<double>() : std::nan("");
}

double best_of(const Json& report, std::string_view probe, const std::function<bool(const Json&)>& pick,
               const std::string& metric) {
  double top = 0;
  for (const Json& r : report["results"]) {
    if (r.value("probe", "") != probe || r.value("status", "") != "ok" || !pick(r)) continue;
    const double v = figure(r, metric);
    if (std::isfinite(v)) top = std::max(top, v);
  }
  return top;
}

}  // namespace

const std::vector<NcuMetric>& ncu_metrics() {
  static const std::vector<NcuMetric> metrics = [] {
    std::vector<NcuMetric> m{
        {kTime, "the kernel's time (ns)"},
        {kClock, "the SM clock it ran at"},
        {kDramRead, "bytes read from HBM"},
        {kDramWrite, "bytes written to HBM"},
        {kL2, "bytes the L2's slices served"},
        {kSmemWavefronts, "shared-memory wavefronts (128 bytes each)"},
        {kSmemRequested, "bytes shared-memory instructions asked for"},
        {kFfma, "FFMA thread instructions"},
        {kFadd, "FADD thread instructions"},
        {kFmul, "FMUL thread instructions"},
        {kMufuWarpInstructions, "MUFU warp instructions"},
        {kInteger, "integer thread instructions"},
    };
    for (const TensorPath& p : kTensorPaths) m.push_back({p.metric, "tensor-pipe operations", p.optional});
    return m;
  }();
  return metrics;
}

std::string ncu_metric_list() {
  std::string out = kGpuName;
  for (const NcuMetric& m : ncu_metrics()) out += fmt::format("{}{}", out.empty() ? "" : ",", m.name);
  return out;
}

std::vector<Kernel> parse_ncu_csv(std::string_view text, const std::string& source) {
  std::istringstream in{std::string(text)};
  std::string line;
  std::vector<std::string> header;
  std::vector<Kernel> kernels;
  std::map<std::string, std::size_t> column;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.front() != '"') continue;  // ncu's ==PROF== lines, the program's output
    const std::vector<std::string> cells = split_csv(line);
    if (header.empty()) {
      if (cells.front() != "ID") continue;
      header = cells;
      for (std::size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
      for (const char* needed : {"ID", "Kernel Name"}) {
        if (!column.count(needed)) throw UsageError(fmt::format("{}: ncu's header has no '{}' column", source, needed));
      }
      for (const NcuMetric& m : ncu_metrics()) {
        if (!column.count(m.name) && !m.optional) {
          throw UsageError(fmt::format("{}: the profile lacks {} ({}); profile with --metrics {}", source, m.name,
                                       m.counts, ncu_metric_list()));
        }
      }
      continue;
    }
    const std::string& id = cells.front();
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) continue;  // the units row
    if (cells.size() != header.size()) {
      throw UsageError(fmt::format("{}: kernel {} has {} cells where the header has {}", source, id, cells.size(),
                                   header.size()));
    }
    Kernel k;
    k.id = std::stoi(id);
    k.name = cells[column["Kernel Name"]];
    if (column.count(kGpuName)) k.gpu = cells[column[kGpuName]];
    for (const NcuMetric& m : ncu_metrics()) {
      if (!column.count(m.name)) {
        k.lacking.push_back(m.name);
        k.counters[m.name] = 0;
        continue;
      }
      k.counters[m.name] = number(cells[column[m.name]], fmt::format("{}: kernel {} ({}), {}", source, id, k.name, m.name));
    }
    kernels.push_back(std::move(k));
  }
  if (header.empty()) {
    throw UsageError(fmt::format("{}: no ncu raw-page CSV here (want `ncu --csv --page raw --print-units base` "
                                 "output, whose header starts with \"ID\")", source));
  }
  return kernels;
}

double Work::tensor_total() const {
  double sum = 0;
  for (const auto& [type, flops] : tensor_flops) sum += flops;
  return sum;
}

Work work_of(const Kernel& k) {
  const auto& c = k.counters;
  Work w;
  w.seconds = c.at(kTime) * 1e-9;
  w.sm_clock_mhz = c.at(kClock) * 1e-6;
  for (const TensorPath& p : kTensorPaths) {
    if (c.at(p.metric) > 0) w.tensor_flops[p.type] += c.at(p.metric);
  }
  w.fp32_flops = 2 * c.at(kFfma) + c.at(kFadd) + c.at(kFmul);
  w.mufu_ops = c.at(kMufuWarpInstructions) * kThreadsPerWarp;
  w.int_ops = c.at(kInteger);
  w.dram_read_bytes = c.at(kDramRead);
  w.dram_write_bytes = c.at(kDramWrite);
  w.l2_bytes = c.at(kL2);
  w.smem_bytes = c.at(kSmemWavefronts) * kWavefrontBytes;
  w.smem_requested_bytes = c.at(kSmemRequested);
  return w;
}

Ceilings ceilings_from_report(const Json& report, const std::string& source) {
  Ceilings c;
  c.source = source;
  c.device = report["device"];
  c.host = report["host"];
  c.seed = report["tool"].value("seed", std::uint64_t{0});
  c.gpu = c.device.value("name", "");
  c.sms = report["device"].value("sms", 0);
  const auto rows = [](const char* level, const char* op) {
    return [=](const Json& r) { return r["params"].value("level", "") == level && r["params"].value("op", "") == op; };
  };
  c.hbm_read_bytes_per_s = best_of(report, "bandwidth", rows("hbm", "read"), "tbps") * 1e12;
  c.hbm_write_bytes_per_s = best_of(report, "bandwidth", rows("hbm", "write"), "tbps") * 1e12;
  c.hbm_copy_bytes_per_s = best_of(report, "bandwidth", rows("hbm", "copy"), "tbps") * 1e12;
  // The L2: lines each read by one SM a pass (bandwidth's L2 row, the l2 ladder's streams), what the slices serve.
  const auto stream = [](const Json& r) {
    return r["params"].value("test", "") == "stream" && !r["metrics"].contains("not_judged");
  };
  c.l2_bytes_per_s = std::max(best_of(report, "bandwidth", rows("l2", "read"), "tbps"), best_of(report, "l2", stream, "tbps")) * 1e12;
  if (const Json* smem = find_row(report, "bandwidth", [](const Json& r) { return r["params"].value("level", "") == "smem"; })) {
    c.smem_bytes_per_clock_per_sm = figure(*smem, "bytes_per_clock_per_sm");
  }
  for (const Json& r : report["results"]) {
    if (r.value("probe", "") != "tensor-cores" || r.value("status", "") != "ok") continue;
    const std::string dtype = r["params"].value("dtype", "");
    const double pct = figure(r, "wgmma_pct_clock_peak");
    if (std::isfinite(pct)) c.tensor_flop_per_clock_per_sm[dtype] = pct / 100 * hopper_flop_per_clock_per_sm(dtype);
  }
  for (const Json& r : report["results"]) {
    const Json& p = r["params"];
    if (r.value("probe", "") != "overlap" || r.value("status", "") != "ok" || p.value("warpgroups", 0) != kOverlapWarpgroups) continue;
    const std::string filler = p.value("filler", "");
    const double pct = figure(r, "pct_clock_peak");
    if (filler == "none") {
      c.overlap_fma_pct[0] = c.overlap_ex2_pct[0] = pct;
    } else {
      (filler == "fma" ? c.overlap_fma_pct : c.overlap_ex2_pct)[p.value("per_wgmma", 0.0)] = pct;
    }
  }
  std::vector<std::string> lacking;
  if (c.hbm_read_bytes_per_s <= 0) lacking.push_back("bandwidth's HBM read");
  if (c.l2_bytes_per_s <= 0) lacking.push_back("an L2 read (bandwidth --level l2, or the l2 probe)");
  if (c.tensor_flop_per_clock_per_sm.empty()) lacking.push_back("tensor-cores");
  if (c.sms <= 0) lacking.push_back("the device section's SM count");
  if (!lacking.empty()) {
    throw UsageError(fmt::format("--ceilings {}: the report lacks {}; give a `tkprobe all` report or a suite "
                                 "baseline (results/h200/suite.json)", source, fmt::join(lacking, ", ")));
  }
  return c;
}

double overlap_pct(const std::map<double, double>& rows, double per_wgmma) {
  if (rows.empty() || per_wgmma <= 0) return 100;
  const double reference = rows.begin()->first == 0 ? rows.begin()->second : 100;
  auto above = rows.lower_bound(per_wgmma);
  double share = 0;  // of the reference row's rate
  if (above == rows.end()) {
    share = std::prev(above)->second / reference;
  } else if (above == rows.begin() || above->first == per_wgmma) {
    share = above->second / reference;
  } else {
    const auto below = std::prev(above);
    const double t = (per_wgmma - below->first) / (above->first - below->first);
    share = (below->second + t * (above->second - below->second)) / reference;
  }
  return 100 * std::min(share, 1.0);  // a filler row a little above the reference is noise, not a faster pipe
}

double hbm_rate(const Ceilings& c, double write_share) {
  const double read = c.hbm_read_bytes_per_s;
  const double copy = c.hbm_copy_bytes_per_s > 0 ? c.hbm_copy_bytes_per_s : read;
  const double write = c.hbm_write_bytes_per_s > 0 ? c.hbm_write_bytes_per_s : read;
  const double share = std::clamp(write_share, 0.0, 1.0);
  const double per_byte = share <= 0.5 ? std::lerp(1 / read, 1 / copy, share / 0.5)
                                       : std::lerp(1 / copy, 1 / write, (share - 0.5) / 0.5);
  return 1 / per_byte;
}

std::vector<Bound> bounds(const Work& w, const Ceilings& c) {
  const double hz = w.sm_clock_mhz * 1e6;
  std::vector<Bound> out;
  const auto add = [&](Ceiling ceiling, double work) {
    if (work <= 0 || ceiling.rate <= 0) return;
    const double seconds = work / ceiling.rate;
    out.push_back({std::move(ceiling), work, seconds, 100 * seconds / w.seconds});
  };
  if (w.dram_bytes() > 0) {
    const double written = w.dram_write_bytes / w.dram_bytes();
    add({"hbm", "bytes", hbm_rate(c, written), true,
         fmt::format("bandwidth: HBM at {:.0f}% written (best read {:.2f}, copy {:.2f}, write {:.2f} TB/s)",
                     100 * written, c.hbm_read_bytes_per_s / 1e12, c.hbm_copy_bytes_per_s / 1e12,
                     c.hbm_write_bytes_per_s / 1e12)},
        w.dram_bytes());
  }
  add({"l2", "bytes", c.l2_bytes_per_s, true, "the best L2 read of lines read once a pass"}, w.l2_bytes);
  add({"smem", "bytes", c.smem_bytes_per_clock_per_sm * c.sms * hz, c.smem_bytes_per_clock_per_sm > 0,
       "bandwidth: conflict-free shared loads, per clock"},
      w.smem_bytes);
  for (const auto& [type, flops] : w.tensor_flops) {
    std::string dtype = type == "fp8" ? "e4m3" : type == "int8" ? "s8" : type;
    if (!c.tensor_flop_per_clock_per_sm.count(dtype) && dtype == "fp16") dtype = "bf16";  // the same pipe rate
    const bool measured = c.tensor_flop_per_clock_per_sm.count(dtype) > 0;
    const double per_clock = measured ? c.tensor_flop_per_clock_per_sm.at(dtype) : hopper_flop_per_clock_per_sm(dtype);
    add({"tensor " + type, "FLOP", per_clock * c.sms * hz, measured,
         measured ? fmt::format("tensor-cores {}: wgmma at its measured share of the clock peak", dtype)
                  : "the datasheet's dense rate per clock"},
        flops);
  }
  add({"fp32", "FLOP", kFp32FlopPerClockPerSm * c.sms * hz, false, "128 FP32 lanes per SM"}, w.fp32_flops);
  add({"mufu", "ops", kMufuPerClockPerSm * c.sms * hz, false, "16 special-function units per SM"}, w.mufu_ops);
  add({"int32", "ops", kInt32PerClockPerSm * c.sms * hz, false, "64 INT32 lanes per SM"}, w.int_ops);
  // Tensor work with a softmax beside it: the overlap probe's share of the clock peak at the kernel's
  // filler per wgmma.
  const double bf16 = w.tensor_flops.count("bf16") ? w.tensor_flops.at("bf16") : 0;
  const double fp16 = w.tensor_flops.count("fp16") ? w.tensor_flops.at("fp16") : 0;
  if (bf16 + fp16 > 0 && c.tensor_flop_per_clock_per_sm.count("bf16") && (w.mufu_ops > 0 || w.fp32_flops > 0)) {
    const double filler_threads = (bf16 + fp16) / kWgmmaFlops * kWarpgroupThreads;
    const double pct = std::min(overlap_pct(c.overlap_fma_pct, w.fp32_flops / 2 / filler_threads),
                                overlap_pct(c.overlap_ex2_pct, w.mufu_ops / filler_threads));
    if (pct < kOverlapShownBelowPct)  // the filler costs tensor time beyond the probe's own noise
      add({"overlap", "FLOP", c.tensor_flop_per_clock_per_sm.at("bf16") * pct / 100 * c.sms * hz,
         !c.overlap_ex2_pct.empty(),
         fmt::format("overlap: {:.0f}% of the tensor rate at {:.1f} ex2 and {:.1f} FFMA per thread per wgmma", pct,
                     w.mufu_ops / filler_threads, w.fp32_flops / 2 / filler_threads)},
        bf16 + fp16);
  }
  std::sort(out.begin(), out.end(), [](const Bound& a, const Bound& b) { return a.seconds > b.seconds; });
  return out;
}

namespace {

// "tensor bf16" -> "tensor_bf16": a metric name's part.
std::string metric_part(std::string name) {
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

// What the datasheet promises beside the measured ceilings: HBM from the memory clock and bus
// width, the tensor type's dense peak where the datasheet table has the GPU.
void datasheet_values(Result& r, const Work& w, const Ceilings& c) {
  DeviceInfo d;
  d.mem_clock_mhz = c.device.value("mem_clock_mhz", 0);
  d.mem_bus_bits = c.device.value("mem_bus_bits", 0);
  if (d.mem_clock_mhz > 0 && d.mem_bus_bits > 0) r.value("datasheet_hbm_tbps", hbm_ceiling_tbps(d));
  const std::optional<DatasheetPeaks> peaks = datasheet_peaks(c.gpu);
  if (!peaks || w.tensor_flops.empty()) return;
  const std::string type = std::max_element(w.tensor_flops.begin(), w.tensor_flops.end(), [](auto& a, auto& b) {
                             return a.second < b.second;
                           })->first;
  const std::map<std::string, double> by_type{{"bf16", peaks->bf16}, {"fp16", peaks->fp16}, {"tf32", peaks->tf32},
                                              {"fp8", peaks->fp8},   {"int8", peaks->int8}};
  if (by_type.count(type) && by_type.at(type) > 0) r.value("datasheet_tensor_tflops", by_type.at(type));
}

}  // namespace

Result row_of(const Kernel& k, const Work& w, const std::vector<Bound>& b, const Ceilings& c) {
  Result r("roofline", {{"kernel", k.name}, {"id", k.id}});
  r.value("time_us", w.seconds * 1e6);
  r.value("sm_clock_mhz", w.sm_clock_mhz);
  r.value("tensor_tflop", w.tensor_total() / 1e12);
  r.value("tflops", (w.tensor_total() + w.fp32_flops) / w.seconds / 1e12);  // what the kernel achieved
  r.value("fp32_gflop", w.fp32_flops / 1e9);
  r.value("mufu_gops", w.mufu_ops / 1e9);
  r.value("int_gops", w.int_ops / 1e9);
  r.value("dram_gb", w.dram_bytes() / 1e9);
  r.value("l2_gb", w.l2_bytes / 1e9);
  r.value("smem_gb", w.smem_bytes / 1e9);
  if (w.smem_requested_bytes > 0) r.value("smem_conflict_x", w.smem_bytes / w.smem_requested_bytes);
  const double flops = w.tensor_total() + w.fp32_flops;  // FLOP per byte at each level, where there are both
  if (flops > 0 && w.dram_bytes() > 0) r.value("intensity_dram", flops / w.dram_bytes());
  if (flops > 0 && w.l2_bytes > 0) r.value("intensity_l2", flops / w.l2_bytes);
  if (flops > 0 && w.smem_bytes > 0) r.value("intensity_smem", flops / w.smem_bytes);
  if (!b.empty()) {
    r.value("binding", b[0].ceiling.name);
    r.value("pct_of_binding", b[0].pct);
    r.value("binding_measured", b[0].ceiling.measured);
  }
  if (b.size() > 1) {
    r.value("next", b[1].ceiling.name);
    r.value("pct_of_next", b[1].pct);
  }
  // Per ceiling (a report's metrics are scalars): pct_hbm, pct_tensor_bf16, ...; and the rate it was
  // judged by, in tera-units per second at the kernel's clock (ceiling_hbm in TB/s, ceiling_tensor_bf16
  // in TFLOP/s), which the roofline plot draws.
  for (const Bound& x : b) {
    r.value("pct_" + metric_part(x.ceiling.name), x.pct);
    r.value("ceiling_" + metric_part(x.ceiling.name), x.ceiling.rate / 1e12);
  }
  datasheet_values(r, w, c);
  return r;
}

}  // namespace tkprobe::roofline
