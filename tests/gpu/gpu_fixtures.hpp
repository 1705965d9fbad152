#pragma once
// Running a probe on the GPU through the real command line, for the GPU tests.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "src/device.hpp"
#include "src/report.hpp"
#include "src/requirements.hpp"
#include "src/schema.hpp"
#include "tests/fixtures.hpp"

namespace gpu_fixtures {

using tkprobe::Json;

// Why code needing `needs` cannot run on device 0 with this build, or "": rows of it are then
// `skipped` with this reason (src/requirements.hpp).
inline std::string why_not_here(const tkprobe::Requirements& needs) {
  return tkprobe::why_not_runnable(needs, tkprobe::query_device(0));
}

// `tkprobe <probe> --quick --json FILE <extra...>`: expects exit 0 and a report that matches
// the schema, and returns it.
inline Json run_probe(const std::string& probe, std::vector<std::string> extra = {}) {
  const auto path = fixtures::temp_dir("gpu-" + probe) / "report.json";
  std::vector<std::string> args{probe, "--quick", "--json", path.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = fixtures::run(args);
  EXPECT_EQ(r.code, 0) << r.err;
  const Json report = tkprobe::read_report(path);  // the version 3 file as the document it encodes
  std::ifstream schema_in(std::string(TKPROBE_SOURCE_DIR) + "/results/report.schema.json");
  const auto errors = tkprobe::validate_schema(Json::parse(schema_in), report);
  EXPECT_TRUE(errors.empty()) << errors.front();
  return report;
}

inline double median(const Json& result, const std::string& metric) { return result["metrics"][metric]["median"]; }

// Dense bf16 FLOPs per SM per clock, from the H100 SXM datasheet alone: 989.4 TFLOP/s at its
// 1830 MHz boost over 132 SMs. Tests derive clock-peak figures from it, not from the probes' tables.
inline constexpr double kDenseBf16FlopPerSmPerClock = 989.4e12 / (132 * 1830e6);  // = 4096
// The SM clock a kernel measures for itself (clock64 against %globaltimer): under tensor-core load
// the H200's rows read 1500-1980 MHz of its 1980 (kernel_sm_clock_mhz in results/h200/suite.json), so
// at least 70% of the maximum and at most 1% above it (the two timers agree to about 0.5%).
inline constexpr double kMinLoadedClockShare = 0.70, kClockAgreement = 1.01;

// wgmma's share of the clock peak: 64x256 tiles reach 99% for bf16 and e4m3 on the H200
// (results/h200/suite.json); 95% allows the noise, and past 101% the FLOP count or the clock is wrong.
// One warpgroup per SM, as the occupancy and overlap probes run it, reaches at least 90%.
inline constexpr double kMinWgmmaPctClock = 95, kMaxPctClock = 101;
inline constexpr double kMinOccupancyWgmmaPctClock = 90;

// Every row ran and its product check passed; returns how many rows there were.
inline std::size_t expect_all_correct(const Json& report) {
  for (const auto& r : report["results"]) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_TRUE(r["check"]["passed"].get<bool>()) << r["params"].dump() << " " << r["check"].dump();
  }
  return report["results"].size();
}

// The first row whose params hold every entry of `params`, or null.
inline const Json* find_row(const Json& report, const Json& params) {
  for (const auto& r : report["results"]) {
    bool match = true;
    for (const auto& [k, v] : params.items()) match &= r["params"].value(k, Json()) == v;
    if (match) return &r;
  }
  return nullptr;
}

// The in-kernel clock is plausible for a loaded H200, and the probe's % of the clock peak agrees with
// its TFLOP/s over the datasheet rate per clock derived here (fp8 runs at twice bf16's).
inline void expect_consistent_clock_peak(const Json& report, const Json& r, const std::string& tflops,
                                         const std::string& pct, double flop_per_bf16_flop) {
  const double max_mhz = report["device"]["sm_clock_max_mhz"], mhz = r["telemetry"]["kernel_sm_clock_mhz"];
  EXPECT_GE(mhz, kMinLoadedClockShare * max_mhz) << r["params"].dump();
  EXPECT_LE(mhz, kClockAgreement * max_mhz) << r["params"].dump();
  const double peak =
      flop_per_bf16_flop * kDenseBf16FlopPerSmPerClock * report["device"]["sms"].get<double>() * mhz * 1e6;
  EXPECT_NEAR(median(r, pct), 100 * median(r, tflops) * 1e12 / peak, 0.03 * median(r, pct)) << r["params"].dump();
}

}  // namespace gpu_fixtures
