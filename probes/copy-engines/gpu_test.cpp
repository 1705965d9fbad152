// copy-engines on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::run_probe;
using tkprobe::Json;

TEST(CopyEngines, TmaNearsTheCeilingWithFewerRegistersAndInstructionsThanWarpLoads) {
  const Json report = run_probe("copy-engines", {});  // --quick: boxes 64x64, 128x64 x 1, 2 CTAs per SM
  ASSERT_EQ(report["results"].size(), 2 * 2 * 3u) << "2 boxes x 2 CTAs per SM x 3 engines";
  std::map<std::string, double> best_pct;
  std::map<std::string, int> registers;
  std::map<std::string, std::map<std::string, double>> per_kib;  // engine -> box/CTAs per SM -> instructions
  // The TMA's kernel is built for sm_90a alone: elsewhere, or in a PTX-only build, its rows are skipped saying why.
  const std::string tma_why = gpu_fixtures::why_not_here(tkprobe::kTmaNeeds);
  for (const auto& r : report["results"]) {
    if (r["params"]["engine"] == "tma" && !tma_why.empty()) {
      EXPECT_EQ(r["reason"], tma_why) << r.dump();
      continue;
    }
    ASSERT_EQ(r["status"], "ok") << r.dump();
    EXPECT_TRUE(r["check"]["passed"].get<bool>()) << "checksum: " << r["check"].dump();
    const auto& m = r["metrics"];
    const std::string engine = r["params"]["engine"];
    const std::string config = r["params"]["box"].get<std::string>() + "/" + r["params"]["ctas_per_sm"].dump();
    EXPECT_LE(m["pct_ceiling"].get<double>(), 100) << config;
    EXPECT_EQ(m["concurrent_ctas_per_sm"], r["params"]["ctas_per_sm"]) << engine << " " << config;
    best_pct[engine] = std::max(best_pct[engine], m["pct_ceiling"].get<double>());
    registers[engine] = m["registers_per_thread"];
    if (!m["warp_instructions_per_kib"].is_null()) per_kib[engine][config] = m["warp_instructions_per_kib"];
  }
  if (!tma_why.empty()) return;
  EXPECT_GE(best_pct["tma"], 60) << "TMA's best, in % of the HBM ceiling";
  EXPECT_LT(registers["tma"], registers["warp"]);
  for (const auto& [config, tma] : per_kib["tma"]) {
    if (per_kib["warp"].count(config)) {
      EXPECT_LT(tma, per_kib["warp"][config]) << "instructions per KiB at " << config;
    }
  }
}
