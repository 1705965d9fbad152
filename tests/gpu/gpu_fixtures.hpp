#pragma once
// Running a probe on the GPU through the real command line, for the GPU tests.
#include <gtest/gtest.h>

#include <fstream>

#include "src/report.hpp"
#include "src/schema.hpp"
#include "tests/fixtures.hpp"

namespace gpu_fixtures {

using tkprobe::Json;

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
// the H200 ran 1490-1980 MHz of its 1980 (results/NOTES.md), so at least 70% of the maximum and at
// most 1% above it (the two timers agree to about 0.5%).
inline constexpr double kMinLoadedClockShare = 0.70, kClockAgreement = 1.01;

}  // namespace gpu_fixtures
