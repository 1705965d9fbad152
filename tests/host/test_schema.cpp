#include <gtest/gtest.h>

#include <filesystem>

#include <fstream>
#include <stdexcept>

#include "src/schema.hpp"

using tkprobe::Json;
using tkprobe::validate_schema;

static Json load(const std::string& relative) {
  std::ifstream in(std::string(TKPROBE_SOURCE_DIR) + "/" + relative);
  if (!in) throw std::runtime_error("missing " + relative);
  return Json::parse(in);
}

TEST(Schema, ValidatorCatchesEachKindOfViolation) {
  const Json schema = Json::parse(R"({
    "type": "object", "required": ["a", "b"], "additionalProperties": false,
    "properties": {
      "a": {"enum": ["x", "y"]},
      "b": {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": 2},
      "c": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/n"}]}
    },
    "$defs": {"n": {"type": "number", "maximum": 1}}
  })");
  EXPECT_TRUE(validate_schema(schema, Json::parse(R"({"a": "x", "b": [1], "c": 0.5})")).empty());
  EXPECT_EQ(validate_schema(schema, Json::parse(R"({"a": "z", "b": [1]})")).size(), 1u);
  EXPECT_EQ(validate_schema(schema, Json::parse(R"({"b": [1]})")).size(), 1u);
  EXPECT_EQ(validate_schema(schema, Json::parse(R"({"a": "x", "b": [-1, 1, 2]})")).size(), 2u);
  EXPECT_EQ(validate_schema(schema, Json::parse(R"({"a": "x", "b": [], "c": 5})")).size(), 1u);
  EXPECT_EQ(validate_schema(schema, Json::parse(R"({"a": "x", "b": [], "extra": 1})")).size(), 1u);
}

TEST(Schema, UnsupportedKeywordIsRefusedNotIgnored) {
  EXPECT_THROW(validate_schema(Json::parse(R"({"pattern": "^a"})"), Json("a")), std::invalid_argument);
}

// The committed H200 baselines are real reports: each must match the schema.
TEST(Schema, CommittedH200ReportsConform) {
  const Json schema = load("results/report.schema.json");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TKPROBE_SOURCE_DIR) + "/results/h200")) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const std::string name = "results/h200/" + entry.path().filename().string();
    const Json report = load(name);
    const auto errors = validate_schema(schema, report);
    EXPECT_TRUE(errors.empty()) << name << ": " << errors.front();
    EXPECT_EQ(report["device"]["name"], "NVIDIA H200") << name;
    EXPECT_FALSE(report["results"].empty()) << name;
  }
  EXPECT_GE(files, 10) << "info, smem-latency, smem-banks, wgmma, mma-sync, tensor-cores, occupancy, bandwidth, "
                          "mem-latency, tma-swizzle";
}
