// Each probe declares its metrics' names once, in probes/<name>/metrics.json (the C++ constants, the
// claims and the plots read them from there): every metric of every row in the committed reports, the
// claims' inputs among them, is declared by its probe.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "src/claims.hpp"
#include "src/probe.hpp"
#include "src/report.hpp"

namespace {

const std::filesystem::path kRoot(TKPROBE_SOURCE_DIR);

tkprobe::Json declared(const std::string& probe) {
  std::ifstream in(kRoot / "probes" / probe / "metrics.json");
  return tkprobe::Json::parse(in);
}

std::set<std::string> registered() {
  std::set<std::string> names;
  for (const auto& p : tkprobe::make_probes()) names.insert(p->name());
  return names;
}

}  // namespace

TEST(ProbeMetrics, EveryProbeDeclaresItsMetrics) {
  for (const std::string& probe : registered()) {
    ASSERT_TRUE(std::filesystem::exists(kRoot / "probes" / probe / "metrics.json")) << probe;
    const tkprobe::Json json = declared(probe);
    EXPECT_EQ(json.value("probe", ""), probe);
    ASSERT_TRUE(json["metrics"].is_object()) << probe;
    EXPECT_FALSE(json["metrics"].empty()) << probe;
    for (const auto& [name, meaning] : json["metrics"].items()) {
      EXPECT_TRUE(meaning.is_string() && !meaning.get<std::string>().empty()) << probe << " " << name;
    }
  }
}

TEST(ProbeMetrics, TheCommittedReportsCarryOnlyDeclaredMetrics) {
  const auto probes = registered();
  for (const char* report : {"results/h200/suite.json", "results/h200/claims.json"}) {
    const tkprobe::Json doc = tkprobe::read_report(kRoot / report);
    ASSERT_FALSE(doc["results"].empty()) << report;
    for (const auto& row : doc["results"]) {
      const std::string probe = row["probe"];
      if (probe == "claims") continue;  // the claims command's own rows (src/claims.cpp), not a probe's
      ASSERT_TRUE(probes.count(probe)) << report << ": " << probe << " is no registered probe";
      const tkprobe::Json names = declared(probe)["metrics"];
      for (const auto& [metric, value] : row["metrics"].items()) {
        EXPECT_TRUE(names.contains(metric)) << report << ": " << probe << " writes '" << metric << "', which probes/"
                                            << probe << "/metrics.json does not declare";
      }
    }
  }
}

TEST(ProbeMetrics, TheClaimsReadRegisteredProbes) {
  const auto probes = registered();
  for (const auto& run : tkprobe::claim_runs()) EXPECT_TRUE(probes.count(run.probe)) << run.probe;
}
