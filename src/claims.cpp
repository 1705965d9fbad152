#include "src/claims.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

// The metric names of the probes the claims judge, as each declares them (the one place src/ names
// probes: docs/decisions/026-a-probe-is-one-folder.md).
#include "probes/bandwidth/metrics.hpp"
#include "probes/copy-engines/metrics.hpp"
#include "probes/l2/metrics.hpp"
#include "probes/occupancy/metrics.hpp"
#include "probes/quadrants/metrics.hpp"
#include "probes/smem-banks/metrics.hpp"
#include "probes/smem-latency/metrics.hpp"
#include "probes/tensor-cores/metrics.hpp"
#include "src/device.hpp"

namespace tkprobe {
namespace {

// The probes the claims read, by the names their metrics.json declare (generated headers).
namespace bandwidth = probe_metrics::bandwidth;
namespace copy_engines = probe_metrics::copy_engines;
namespace l2 = probe_metrics::l2;
namespace occupancy = probe_metrics::occupancy;
namespace quadrants = probe_metrics::quadrants;
namespace smem_banks = probe_metrics::smem_banks;
namespace smem_latency = probe_metrics::smem_latency;
namespace tensor_cores = probe_metrics::tensor_cores;

// What a rule found: the figure it judged, in words and as a number beside the stated one.
struct Judged {
  std::string measured;
  double value;
  double stated;
  bool holds;
  std::string why;  // what explains a difference, where it is known
};

// A rule's answer: judged, or why it could not judge (no rows, a skipped probe).
struct Outcome {
  std::optional<Judged> judged;
  std::string not_measured;
};

struct Claim {
  std::string id;
  std::string statement;  // the account's words, its H100 figure
  std::string stated;     // that figure as the rule reads it
  std::string source;     // the probe (or device query) that measures it
  std::function<Outcome(const Json& report)> judge;
};

// Rows of `probe` that ran and passed, whose params hold every entry of `match`.
std::vector<const Json*> rows_of(const Json& report, const std::string& probe, const Json& match = Json::object()) {
  std::vector<const Json*> out;
  for (const auto& r : report["results"]) {
    if (r.value("probe", "") != probe || r.value("status", "") != "ok") continue;
    const Json& params = r["params"];
    const bool matches = std::all_of(match.items().begin(), match.items().end(), [&](const auto& kv) {
      return params.contains(kv.key()) && params[kv.key()] == kv.value();
    });
    if (matches) out.push_back(&r);
  }
  return out;
}

// A metric's median (a measurement) or value (a plain number).
double figure(const Json& row, const std::string& metric) {
  const Json& m = row["metrics"][metric];
  return m.is_object() ? m["median"].get<double>() : m.get<double>();
}

// Why `probe` gave no usable rows: its own skip or failure reason, or that it gave none.
Outcome missing(const Json& report, const std::string& probe) {
  for (const auto& r : report["results"]) {
    if (r.value("probe", "") != probe) continue;
    if (r.value("status", "") == "skipped") return {std::nullopt, r.value("reason", "skipped")};
    if (r.value("status", "") == "failed") return {std::nullopt, fmt::format("{} failed its own check", probe)};
  }
  return {std::nullopt, fmt::format("{} gave no rows for it", probe)};
}

Outcome not_yet(std::string why) { return {std::nullopt, std::move(why)}; }

// Holds when `value` lies within `tolerance` (relative) of `stated`.
bool within(double value, double stated, double tolerance) { return std::abs(value / stated - 1) <= tolerance; }

double best(const std::vector<const Json*>& rows, const std::string& metric) {
  double top = 0;
  for (const Json* r : rows) top = std::max(top, figure(*r, metric));
  return top;
}

// The account's figure for this GPU's HBM: ~3 TB/s on the H100 (3.35 on its datasheet), ~4.8 on the H200.
double stated_hbm_tbps(const Json& report) {
  return report["device"].value("name", "").find("H200") != std::string::npos ? 4.8 : 3.35;
}

constexpr double kTolerance = 0.10;  // a stated figure "holds" within 10%, unless a claim says otherwise
constexpr double kLevelStep = 1.15;  // a latency 15% above another is a level of its own (as the l2 probe reads it)
constexpr double kH100BoostMhz = 1830;
constexpr double kDenseBf16Tflops = 989.4;

std::vector<Claim> claims() {
  return {
      {"smem-latency", "A single shared-memory access costs ~30 cycles", "30 cycles", smem_latency::kProbe,
       [](const Json& rep) -> Outcome {
         const auto indexed = rows_of(rep, smem_latency::kProbe, {{"address", "indexed"}});
         const auto direct = rows_of(rep, smem_latency::kProbe, {{"address", "precomputed"}});
         if (indexed.empty() || direct.empty()) return missing(rep, smem_latency::kProbe);
         const double i = figure(*indexed.front(), smem_latency::latency_cycles),
                      d = figure(*direct.front(), smem_latency::latency_cycles);
         return {Judged{fmt::format("{:.0f} cycles per dependent load when the word holds an index ({:.0f} when it "
                                    "holds the next address)",
                                    i, d),
                        i, 30, within(i, 30, 0.2), "the index's scale-and-add is the difference"},
                 ""};
       }},
      {"bank-serialization", "32 banks; an N-way conflict serializes N times", "32-way", smem_banks::kProbe,
       [](const Json& rep) -> Outcome {
         const auto rows = rows_of(rep, smem_banks::kProbe,
                                   {{"access", "ld.shared"}, {"width_bytes", 4}, {"stride", 32}, {"warps", 32}});
         if (rows.empty()) return missing(rep, smem_banks::kProbe);
         const double ways = figure(*rows.front(), smem_banks::measured_ways);
         return {Judged{fmt::format("4-byte loads 128 bytes apart cost {:.1f}x the conflict-free access", ways), ways,
                        32, within(ways, 32, kTolerance), ""},
                 ""};
       }},
      {"unswizzled-conflicts", "Unswizzled shared layouts conflict; the 128-byte swizzle removes it", "8-way vs 1-way",
       smem_banks::kProbe,
       [](const Json& rep) -> Outcome {
         const auto plain = rows_of(rep, smem_banks::kProbe, {{"layout", "8x128B rows, unswizzled"}, {"warps", 32}});
         const auto swizzled =
             rows_of(rep, smem_banks::kProbe, {{"layout", "8x128B rows, 128B swizzle"}, {"warps", 32}});
         if (plain.empty() || swizzled.empty()) return missing(rep, smem_banks::kProbe);
         const double p = figure(*plain.front(), smem_banks::measured_ways),
                      s = figure(*swizzled.front(), smem_banks::measured_ways);
         return {Judged{fmt::format("ldmatrix.x4 over 8 rows of 128 bytes: {:.1f}-way unswizzled, {:.1f}-way "
                                    "swizzled",
                                    p, s),
                        p / s, 8, within(p / s, 8, kTolerance), ""},
                 ""};
       }},
      {"mma-sync-cap", "Without wgmma the tensor cores top out around 63% of peak", "63% of peak", tensor_cores::kProbe,
       [](const Json& rep) -> Outcome {
         const auto rows = rows_of(rep, tensor_cores::kProbe, {{"dtype", "bf16"}});
         if (rows.empty()) return missing(rep, tensor_cores::kProbe);
         const double pct = figure(*rows.front(), tensor_cores::mma_sync_pct_clock_peak);
         return {Judged{fmt::format("bf16 mma.sync at best {:.1f}% of the clock peak", pct), pct, 63,
                        within(pct, 63, kTolerance), "1.5 SM cycles per m16n8k16 where the pipe needs 1 (mma-sync)"},
                 ""};
       }},
      {"wgmma-utilization", "With wgmma, tensor-core utilization reaches >= 94%", ">= 94%", tensor_cores::kProbe,
       [](const Json& rep) -> Outcome {
         const auto rows = rows_of(rep, tensor_cores::kProbe, {{"dtype", "bf16"}});
         if (rows.empty()) return missing(rep, tensor_cores::kProbe);
         const double pct = figure(*rows.front(), tensor_cores::wgmma_pct_clock_peak);
         return {Judged{fmt::format("bf16 wgmma at {:.1f}% of the clock peak", pct), pct, 94, pct >= 94, ""}, ""};
       }},
      {"dense-bf16-peak", "989 TFLOP/s dense bf16 on the tensor cores", "989.4 TFLOP/s", tensor_cores::kProbe,
       [](const Json& rep) -> Outcome {
         const auto rows = rows_of(rep, tensor_cores::kProbe, {{"dtype", "bf16"}});
         if (rows.empty()) return missing(rep, tensor_cores::kProbe);
         const double tflops = figure(*rows.front(), tensor_cores::wgmma_tflops);
         const double mhz = (*rows.front())["telemetry"].value("kernel_sm_clock_mhz", 0.0);
         return {Judged{fmt::format("{:.0f} TFLOP/s from wgmma", tflops), tflops, kDenseBf16Tflops,
                        within(tflops, kDenseBf16Tflops, kTolerance),
                        fmt::format("the SM clock ran at {:.0f} MHz under this load; the datasheet figure assumes "
                                    "{:.0f} MHz",
                                    mhz, kH100BoostMhz)},
                 ""};
       }},
      {"hbm-bandwidth", "HBM at ~3 TB/s (H200: ~4.8)", "3.35 TB/s (H100), 4.8 (H200)", bandwidth::kProbe,
       [](const Json& rep) -> Outcome {
         std::vector<const Json*> rows;
         for (const Json* r : rows_of(rep, bandwidth::kProbe, {{"level", "hbm"}}))
           if (!r->value("peer", false)) rows.push_back(r);
         if (rows.empty()) return missing(rep, bandwidth::kProbe);
         const double tbps = best(rows, bandwidth::tbps), stated = stated_hbm_tbps(rep);
         return {Judged{fmt::format("{:.2f} TB/s, the best SM kernel (read, write or copy)", tbps), tbps, stated,
                        within(tbps, stated, kTolerance),
                        "the stated figure is the interface's peak; refresh and turnarounds keep kernels below it"},
                 ""};
       }},
      {"l2-size", "50 MB of L2", "50 MB", "device query",
       [](const Json& rep) -> Outcome {
         const double mb = rep["device"].value("l2_bytes", 0.0) / 1e6;
         if (mb <= 0) return not_yet("the device section gives no L2 size");
         return {Judged{fmt::format("{:.1f} MB, as the driver reports it", mb), mb, 50, within(mb, 50, kTolerance),
                        "another GPU than the account's H100 may carry another L2"},
                 ""};
       }},
      {"l2-partitions", "The L2 is split into two ~25 MB partitions joined by a crossbar", "25 MB a partition",
       l2::kProbe,
       [](const Json& rep) -> Outcome {
         // The l2 probe's footprint ladder: one SM's dependent latency as the footprint grows. Two
         // partitions that each keep a copy of what their SMs read show as a step at half the L2 to a
         // level of its own, below what lies beyond the L2.
         std::vector<const Json*> ladder = rows_of(rep, l2::kProbe, {{"test", "latency"}});
         if (ladder.size() < 3) return missing(rep, l2::kProbe);
         std::sort(ladder.begin(), ladder.end(), [](const Json* a, const Json* b) {
           return (*a)["params"]["l2_share"].get<double>() < (*b)["params"]["l2_share"].get<double>();
         });
         const auto share = [&](std::size_t i) { return (*ladder[i])["params"]["l2_share"].get<double>(); };
         const auto cycles = [&](std::size_t i) { return figure(*ladder[i], l2::latency_cycles); };
         std::size_t step = 1;
         while (step < ladder.size() && cycles(step) < kLevelStep * cycles(0)) ++step;
         if (step == ladder.size() || share(step) > 1) {
           return {Judged{fmt::format("no step inside the L2: {:.0f} cycles up to its whole size", cycles(step - 1)), 0,
                          25, false, "one level: every line as near as every other"},
                   ""};
         }
         const double l2_mb = rep["device"].value("l2_bytes", 0.0) / 1e6;
         const double partition_mb = l2_mb * 0.5 * (share(step - 1) + share(step));  // the step's midpoint
         double far = cycles(step);  // the level after the step, inside the L2
         for (std::size_t i = step; i < ladder.size() && share(i) < 1; ++i) far = std::max(far, cycles(i));
         const double beyond = cycles(ladder.size() - 1);
         const bool own_level = share(ladder.size() - 1) > 1 && beyond >= kLevelStep * far;
         return {Judged{fmt::format("{:.0f} cycles up to {:.0f}% of the L2, {:.0f}-{:.0f} from {:.0f}% on ({:.0f} beyond "
                                    "it): a step at ~{:.0f} MB",
                                    cycles(step - 1), 100 * share(step - 1), cycles(step), far, 100 * share(step),
                                    beyond, partition_mb),
                        partition_mb, 25, own_level && share(step) <= 0.75,
                        "up to half the L2 every line comes as fast as the nearest (as if each half kept a copy for its "
                        "SMs); past half, from farther, at a level of its own below HBM's; the H200's L2 is 60 MB, so "
                        "its halves are ~30"},
                 ""};
       }},
      {"l2-bandwidth", "L2 at ~12 TB/s", "12 TB/s", l2::kProbe,
       [](const Json& rep) -> Outcome {
         // The best of every L2 read. Lines each read by one SM a pass (bandwidth's L2 row, the l2 ladder's
         // streams) give the slices' rate; every SM reading the same lines (the l2 probe's bandwidth row
         // `all`) gives what the crossbar delivers, about twice what the slices serve (gpu.ncu_memory).
         std::vector<const Json*> own = rows_of(rep, bandwidth::kProbe, {{"level", "l2"}}), shared;
         for (const Json* r : rows_of(rep, l2::kProbe)) {
           const Json& p = r->at("params");
           if (!r->at("metrics").contains(l2::tbps)) continue;
           if (p.value("test", "") == "stream") own.push_back(r);
           if (p.value("test", "") == "bandwidth" && p.value("source", "") == "all") shared.push_back(r);
         }
         if (own.empty() && shared.empty()) return missing(rep, l2::kProbe);
         const double own_tbps = best(own, bandwidth::tbps), shared_tbps = best(shared, bandwidth::tbps);
         const double tbps = std::max(own_tbps, shared_tbps);  // l2's rows carry bandwidth's metric name
         const std::string which = shared_tbps > own_tbps
                                       ? fmt::format("every SM reading the same lines; each line read by one SM a "
                                                     "pass: {:.2f}", own_tbps)
                                       : std::string("each line read by one SM a pass");
         return {Judged{fmt::format("{:.2f} TB/s, the best L2 read with every SM ({})", tbps, which), tbps, 12,
                        within(tbps, 12, kTolerance),
                        "shared lines reach the SMs at about twice what the slices serve (ncu); far-partition reads "
                        "do not lower it (the l2 probe's ladder)"},
                 ""};
       }},
      {"smem-aggregate", "~33 TB/s of shared memory bandwidth in all", "33 TB/s", bandwidth::kProbe,
       [](const Json& rep) -> Outcome {
         const auto rows = rows_of(rep, bandwidth::kProbe, {{"level", "smem"}});
         if (rows.empty()) return missing(rep, bandwidth::kProbe);
         const double tbps = figure(*rows.front(), bandwidth::tbps);
         return {Judged{fmt::format("{:.1f} TB/s, conflict-free 16-byte loads on every SM", tbps), tbps, 33,
                        within(tbps, 33, kTolerance), ""},
                 ""};
       }},
      {"sm-count", "132 SMs", "132", "device query",
       [](const Json& rep) -> Outcome {
         const double sms = rep["device"].value("sms", 0.0);
         return {Judged{fmt::format("{:.0f} SMs, as the driver reports them", sms), sms, 132, sms == 132, ""}, ""};
       }},
      {"smem-per-block", "Up to 227 KB of shared memory per block", "227 KB", "device query",
       [](const Json& rep) -> Outcome {
         const double kb = rep["device"].value("smem_per_block_optin", 0.0) / 1024;
         return {Judged{fmt::format("{:.0f} KB a block may opt into", kb), kb, 227, kb == 227, ""}, ""};
       }},
      {"sm-quadrants", "Each SM has four quadrants, each with a scheduler, a register file and a tensor core",
       "4 quadrants", quadrants::kProbe,
       [](const Json& rep) -> Outcome {
         const auto one = rows_of(rep, quadrants::kProbe, {{"warps_per_sm", 1}});
         const auto four = rows_of(rep, quadrants::kProbe, {{"warps_per_sm", 4}});
         if (one.empty() || four.empty()) return missing(rep, quadrants::kProbe);
         const double lanes1 = figure(*one.front(), quadrants::fma_lanes_per_clock);
         const double lanes4 = figure(*four.front(), quadrants::fma_lanes_per_clock);
         return {Judged{fmt::format("FFMA lanes per SM cycle: {:.1f} with one warp, {:.1f} with four ({:.2f}x)", lanes1,
                                    lanes4, lanes4 / lanes1),
                        lanes4 / lanes1, 4, within(lanes4 / lanes1, 4, kTolerance),
                        "a warp issues in one quadrant; four warps reach all four"},
                 ""};
       }},
      // "989 TFLOP/s on tensor cores vs ~60 for everything else": the fastest other unit is FP32 FMA.
      {"non-tensor-cycles", "Cycles without tensor-core work cap utilization at a few percent (~60 of 989 TFLOP/s)",
       "6.1% of the tensor peak", quadrants::kProbe,
       [](const Json& rep) -> Outcome {
         const auto rows = rows_of(rep, quadrants::kProbe);
         if (rows.empty()) return missing(rep, quadrants::kProbe);
         constexpr double kStatedPct = 100.0 * 60 / 989;
         const double lanes = best(rows, quadrants::fma_lanes_per_clock);
         const int tensor = hopper_flop_per_clock_per_sm("bf16");
         const double pct = 100 * 2 * lanes / tensor;  // an FMA is 2 FLOP
         return {Judged{fmt::format("FFMA at best {:.1f} lanes per SM cycle: {:.1f}% of the tensor cores' {} bf16 FLOP "
                                    "per cycle",
                                    lanes, pct, tensor),
                        pct, kStatedPct, within(pct, kStatedPct, kTolerance),
                        "a cycle with no tensor work does at most this share of a tensor cycle's FLOPs"},
                 ""};
       }},
      {"moderate-occupancy", "The H100 needs only moderate occupancy", "one warpgroup per SM", occupancy::kProbe,
       [](const Json& rep) -> Outcome {
         const auto rows = rows_of(rep, occupancy::kProbe, {{"kernel", "wgmma"}});
         if (rows.empty()) return missing(rep, occupancy::kProbe);
         const double top = best(rows, occupancy::pct_clock_peak);
         double warps = 0;
         for (const Json* r : rows) {
           if (figure(*r, occupancy::pct_clock_peak) >= 0.9 * top) {
             warps = figure(*r, occupancy::warps_per_sm);
             break;
           }
         }
         return {Judged{fmt::format("wgmma reaches 90% of its best with {:.0f} warps per SM ({:.0f}% occupancy)",
                                    warps, 100 * warps / 64),
                        warps, 4, warps <= 8, ""},
                 ""};
       }},
      {"warp-copies", "Warp-synchronous copies are near the worst fallback; TMA's bulk copies matter", "TMA ahead",
       copy_engines::kProbe,
       [](const Json& rep) -> Outcome {
         const auto tma = rows_of(rep, copy_engines::kProbe, {{"engine", "tma"}});
         const auto warp = rows_of(rep, copy_engines::kProbe, {{"engine", "warp"}});
         if (tma.empty() || warp.empty()) return missing(rep, copy_engines::kProbe);
         const double t = best(tma, copy_engines::tbps), w = best(warp, copy_engines::tbps);
         return {Judged{fmt::format("best warp copy {:.2f} TB/s against TMA's {:.2f} ({:.0f}%)", w, t, 100 * w / t),
                        w / t, 1, w < 0.9 * t, "warp copies issue several times TMA's instructions per KiB"},
                 ""};
       }},
      {"wgmma-layout-doc", "The documented 128-byte swizzled wgmma layout was wrong", "", "",
       [](const Json&) {
         return not_yet("tkprobe checks the hardware against its own layout model (wgmma-layout), not against a "
                        "figure in the documentation");
       }},
      {"attention-vs-fa2", "The tile-DSL FlashAttention forward is ~30% faster than FlashAttention-2", "1.3x", "",
       [](const Json&) {
         return not_yet("needs PyTorch's FlashAttention-2 in the same process: scripts/compare_sdpa.py measures it");
       }},
      {"based", "Based linear attention at 215 TFLOP/s", "215 TFLOP/s", "",
       [](const Json&) {
         return not_yet("the account counts Based's FLOPs its own way (ThunderKittens' 1.14 ms at B16 H16 N16384 is "
                        "299 TFLOP/s by tkprobe's count: probes/based/README.md); compare times with `tkprobe based`");
       }},
  };
}

Result claim_row(const Claim& c, const Json& report) {
  Result r("claims", {{"claim", c.id}});
  const Outcome o = c.judge(report);
  r.value("statement", c.statement);
  r.value("stated", c.stated);
  if (!o.judged) {
    r.status = Status::skipped;
    r.reason = "not measured: " + o.not_measured;
    return r;
  }
  const Judged& j = *o.judged;
  r.value("measured", j.measured);
  r.value("verdict", j.holds ? "holds" : "differs");
  r.value("difference_pct", 100 * (j.value / j.stated - 1));
  r.value("source", c.source);
  if (!j.why.empty()) r.value("why", j.why);
  return r;
}

}  // namespace

std::vector<ClaimRun> claim_runs() {
  return {{smem_latency::kProbe, {}},
          {smem_banks::kProbe, {"--width", "4"}},
          {tensor_cores::kProbe, {"--dtype", "bf16"}},
          {bandwidth::kProbe, {}},
          {occupancy::kProbe, {"--kernel", "wgmma"}},
          {quadrants::kProbe, {"--warps", "1,4,8"}},
          {copy_engines::kProbe, {}},
          {l2::kProbe, {}}};
}

std::vector<Result> judge_claims(const Json& report) {
  std::vector<Result> rows;
  for (const Claim& c : claims()) rows.push_back(claim_row(c, report));
  return rows;
}

}  // namespace tkprobe
