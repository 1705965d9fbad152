#pragma once
// Running a probe on the GPU through the real command line, for the GPU tests.
#include <gtest/gtest.h>

#include <fstream>

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
  std::ifstream in(path);
  const Json report = Json::parse(in);
  std::ifstream schema_in(std::string(TKPROBE_SOURCE_DIR) + "/results/report.schema.json");
  const auto errors = tkprobe::validate_schema(Json::parse(schema_in), report);
  EXPECT_TRUE(errors.empty()) << errors.front();
  return report;
}

inline double median(const Json& result, const std::string& metric) { return result["metrics"][metric]["median"]; }

}  // namespace gpu_fixtures
