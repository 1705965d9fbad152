#pragma once
// `tkprobe roofline`: a kernel's work and traffic, counted by ncu, held against the ceilings this GPU
// was measured to have (a tkprobe report of the same GPU model). Each ceiling turns the kernel's work
// into the least time it needs there; the longest is the ceiling that binds, and the kernel's time
// against it is how close it came. Clock-bound ceilings (tensor pipes, shared memory, FFMA, MUFU) are
// scaled to the SM clock the kernel ran at; the memory ones are not (the HBM and L2 keep their own).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "src/json.hpp"
#include "src/report.hpp"

namespace tkprobe::roofline {

// One ncu metric the roofline reads (base units) and what it counts.
struct NcuMetric {
  const char* name;
  const char* counts;
  bool optional = false;  // a chip whose ncu lacks it leaves it out of the profile: counted as none
};
// Every metric a profile must hold, in the order ncu is asked for them.
const std::vector<NcuMetric>& ncu_metrics();
// The same names and the GPU's name, comma-separated, for ncu's --metrics.
std::string ncu_metric_list();

// One profiled launch: its ID in ncu's report, its name, and its counters by metric name.
struct Kernel {
  int id = 0;
  std::string name;
  std::string gpu;  // ncu's device__attribute_display_name, where the profile holds it
  std::map<std::string, double> counters;
  std::vector<std::string> lacking;  // optional metrics the profile does not hold
};

// The kernels of `ncu --csv --page raw --print-units base` output (lines that are not CSV, such as
// ncu's ==PROF== messages, are skipped). Throws UsageError, naming `source`, where the text holds no
// header, a row lacks a metric the roofline needs, or a value is no number.
std::vector<Kernel> parse_ncu_csv(std::string_view text, const std::string& source);

// What a kernel did, in the units the ceilings use.
struct Work {
  double seconds = 0;
  double sm_clock_mhz = 0;
  std::map<std::string, double> tensor_flops;  // by input type: bf16, fp16, tf32, fp8, int8 (ops)
  double fp32_flops = 0;                       // FFMA x2 + FADD + FMUL, per thread
  double mufu_ops = 0;                         // MUFU (ex2, rcp, ...) per thread
  double int_ops = 0;                          // integer instructions per thread
  double dram_read_bytes = 0, dram_write_bytes = 0, l2_bytes = 0;
  double smem_bytes = 0;            // wavefronts x 128: what the banks delivered, conflicts' replays counted
  double smem_requested_bytes = 0;  // what the instructions asked for
  double tensor_total() const;
  double dram_bytes() const { return dram_read_bytes + dram_write_bytes; }
};
Work work_of(const Kernel& k);

// A ceiling: the rate of one unit, at `mhz` where it is clock-bound (0 where not), from a tkprobe
// report's row (`measured`) or from the architecture's documented rate where no probe measures it.
struct Ceiling {
  std::string name;   // hbm, l2, smem, tensor bf16, ..., fp32, mufu, overlap
  std::string unit;   // what `rate` counts per second: bytes, FLOP, ops
  double rate = 0;    // per second, at the kernel's clock where clock-bound
  bool measured = false;
  std::string source;  // the row it came from, or the documented figure
};

// The measured rates of one GPU model, read from a tkprobe report; scaled to a clock by at().
struct Ceilings {
  Json device;      // the report's device section
  Json host;        // and its host: where the ceilings were measured
  std::uint64_t seed = 0;  // the seed of the ceilings' inputs, the roofline's only random draw
  std::string gpu;  // its name
  int sms = 0;
  double hbm_read_bytes_per_s = 0, hbm_write_bytes_per_s = 0;  // measured, not clock-bound
  double hbm_copy_bytes_per_s = 0;                              // read and written bytes together
  double l2_bytes_per_s = 0;
  double smem_bytes_per_clock_per_sm = 0;                  // measured
  std::map<std::string, double> tensor_flop_per_clock_per_sm;  // measured, by input type
  // The overlap probe's rows (two warpgroups): filler per thread per wgmma -> % of the clock peak.
  std::map<double, double> overlap_fma_pct, overlap_ex2_pct;
  std::string source;  // the report's file
};
// Reads `report` (a tkprobe report of the bandwidth, l2, tensor-cores and overlap probes: a `tkprobe
// all` run or a suite baseline). Throws UsageError when it lacks the HBM, L2 or tensor rows.
Ceilings ceilings_from_report(const Json& report, const std::string& source);

// HBM's measured rate for a kernel that writes `write_share` of its HBM bytes: the time per byte
// linear between the best read (none written), copy (half) and write (all); the read's where the
// report lacks the others.
double hbm_rate(const Ceilings& c, double write_share);

// A ceiling's verdict on a kernel: the least time its work needs there, as a share of the kernel's.
struct Bound {
  Ceiling ceiling;
  double work = 0;       // in the ceiling's unit
  double seconds = 0;    // work / rate
  double pct = 0;        // seconds / the kernel's seconds x 100: how close the kernel came to it
};
// Every ceiling the kernel has work for, the binding one (longest least time) first.
std::vector<Bound> bounds(const Work& w, const Ceilings& c);

// The overlap ceiling's share of the tensor clock peak for `per_wgmma` filler instructions per
// thread per bf16 m64n256k16 wgmma, relative to the row without filler: linear between the probe's
// rows, the last row's beyond them, at most 100%.
double overlap_pct(const std::map<double, double>& rows, double per_wgmma);

// The report row for one kernel: probe "roofline", params {kernel, id}; plain values (one profile):
// its work, each ceiling's rate and the kernel's share of it, and the datasheet's HBM and tensor peaks.
Result row_of(const Kernel& k, const Work& w, const std::vector<Bound>& b, const Ceilings& c);

}  // namespace tkprobe::roofline
