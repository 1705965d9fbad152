// `tkprobe compare` on two real runs of one probe.
#include <gtest/gtest.h>

#include "tests/fixtures.hpp"

// Two real runs, not one report against itself: unchanged code must pass the gate.
TEST(Compare, TwoRunsOfUnchangedCodePass) {
  const auto dir = fixtures::temp_dir("gpu-compare");
  const auto a = dir / "a.json", b = dir / "b.json";
  ASSERT_EQ(fixtures::run({"smem-latency", "--quick", "--json", a.string()}).code, 0);
  ASSERT_EQ(fixtures::run({"smem-latency", "--quick", "--json", b.string()}).code, 0);
  const auto r = fixtures::run({"compare", a.string(), b.string()});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
}
