// gemm on a real GPU, through the real command line.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::run_probe;
using tkprobe::Json;

TEST(Gemm, TheDslGemmAgreesWithCublasLt) {
  const Json report = run_probe("gemm", {});  // --quick: 2048^3
  ASSERT_EQ(report["results"].size(), 2u);
  for (const auto& r : report["results"]) {
    EXPECT_EQ(r["status"], "ok") << r["params"].dump() << " " << r["check"].dump();
  }
  const auto& tk = report["results"][1]["metrics"];
  EXPECT_LT(tk["rel_error_vs_cublaslt"].get<double>(), 1e-2);
  // The H200: 1.11 at --quick's 2048^3, 1.00-1.03 at 4096^3 and 8192^3 (results/h200/suite.json);
  // 10% below parity is a regression.
  EXPECT_GE(tk["ratio_vs_cublaslt"]["median"].get<double>(), 0.90) << "the DSL's GEMM fell behind cuBLASLt";
  // compare judges the paired ratio; cuBLASLt's own row is a peer's, never judged.
  EXPECT_EQ(report["results"][1]["primary"], "ratio_vs_cublaslt");
  EXPECT_EQ(report["results"][0].value("peer", false), true);
  EXPECT_EQ(tk["tflops"]["n"], tk["ratio_vs_cublaslt"]["n"]) << "the TFLOP/s come from the paired samples";
}

TEST(Gemm, WithoutItsPeerTheHostChecksTheProduct) {
  const Json report = run_probe("gemm", {"--no-peer"});
  ASSERT_EQ(report["results"].size(), 1u);
  const auto& r = report["results"][0];
  EXPECT_EQ(r["status"], "ok") << r["check"].dump();
  EXPECT_EQ(r["params"]["kernel"], "tk");
  EXPECT_EQ(r["params"]["timed"], "alone");
  EXPECT_LT(r["metrics"]["spot_error_vs_host"].get<double>(), 1e-2);
}
