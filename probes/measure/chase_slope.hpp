#pragma once
// A dependent chase's latency as cluster measures it (and smem-latency, inline, until this has run on
// a GPU): each sample runs a chase of
// every length (ascending) and fits a line through their cycles. The slope is the cycles per load;
// the intercept is the fixed cost (clock reads, loop entry, the last load in flight) the slope leaves
// out; the line's worst relative residual says whether the cycles really grew with the loads alone.
#include <functional>
#include <string>
#include <vector>

#include "probes/measure/chain.hpp"
#include "src/harness.hpp"
#include "src/report.hpp"

namespace tkprobe {

inline constexpr double kMaxChaseResidual = 0.02;  // cycles linear in chase length within 2%

// Chase lengths in loads: six (four with --quick), doubling, so that the line has points to fit.
inline std::vector<int> chase_lengths(bool quick) {
  return quick ? std::vector<int>{256, 512, 1024, 2048} : std::vector<int>{256, 512, 1024, 2048, 4096, 8192};
}

struct ChaseSlope {
  Measurement m;                // of the slope: cycles per dependent load
  double overhead_cycles = 0;   // the intercepts' median
  double max_rel_residual = 0;  // the worst line of all the samples
};

// `chase(loads)` runs one chase of `loads` loads and returns its cycles; `last_window()` is the clock
// window of the chase just run (the longest, as the lengths ascend).
inline ChaseSlope measure_chase_slope(Harness& harness, const std::string& label, const std::vector<int>& lengths,
                                      const std::function<double(int)>& chase,
                                      const std::function<ClockWindow()>& last_window) {
  const std::vector<double> x(lengths.begin(), lengths.end());
  std::vector<double> intercepts, residuals;
  ChaseSlope out;
  out.m = harness.measure(label, [&] {
    std::vector<double> y;
    for (int loads : lengths) y.push_back(chase(loads));
    const ClockWindow longest = last_window();
    const auto line = chain::fit_line(x, y);
    intercepts.push_back(line.intercept);
    residuals.push_back(line.max_rel_residual);
    return Sample{line.slope, window_mhz(longest), (longest.end.ns - longest.begin.ns) * 1e-9};
  });
  out.overhead_cycles = summarize(intercepts).median;
  out.max_rel_residual = summarize(residuals).max;
  return out;
}

// The row's latency (judged, in cycles), its ns at the clock the chase ran at, the fixed cost, the
// linearity check and the telemetry.
inline void add_chase_slope(Result& r, const ChaseSlope& s) {
  r.metric("latency_cycles", s.m.stats, "cycles", Better::lower);
  r.value("latency_ns", s.m.stats.median / s.m.sm_clock_mhz * 1e3);
  r.value("overhead_cycles", s.overhead_cycles);
  r.checked({{"what", "cycles linear in chase length"}, {"max_rel_residual", s.max_rel_residual},
             {"max", kMaxChaseResidual}},
            s.max_rel_residual <= kMaxChaseResidual);
  r.telemetry = s.m.telemetry;
}

}  // namespace tkprobe
