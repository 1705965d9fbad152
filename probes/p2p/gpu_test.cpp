// p2p on real GPUs, through the real command line: with two or more, every ordered pair measured four
// ways, every figure checked and inside what a link allows; with one, the probe is skipped saying why
// (exit 3).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <set>

#include "tests/gpu/gpu_fixtures.hpp"

using gpu_fixtures::median;
using gpu_fixtures::run_probe;
using tkprobe::Json;

namespace {

int device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

// A peer's bytes cross NVLink (H100/H200 SXM: 450 GB/s each way, NVIDIA's datasheet) or PCIe (Gen4
// x16 about 25 GB/s in practice, Gen5 about 50): whatever the link, between 5 GB/s and its 450.
constexpr double kMinGbps = 5, kMaxGbps = 460;
// A dependent load into a peer's L2 waits a round trip over the link: longer than any local level
// (the H200's own L2 276 cycles, its HBM 658: results/h200/suite.json), and under 20 us at 2 GHz.
constexpr double kMinPeerCycles = 700, kMaxPeerCycles = 40000;

}  // namespace

TEST(P2p, EveryOrderedPairFourWaysCheckedAndWithinTheLink) {
  const int n = device_count();
  if (n < 2) GTEST_SKIP() << "p2p needs two or more GPUs; this machine has " << n;
  const Json report = run_probe("p2p");
  ASSERT_EQ(report["devices"].size(), std::size_t(n));
  ASSERT_EQ(report["results"].size(), std::size_t(4 * n * (n - 1))) << "copy-engine, sm-stores, sm-loads, sm-chase";
  std::set<std::string> pairs;
  for (const auto& r : report["results"]) {
    const auto& p = r["params"];
    if (r["status"] == "skipped") {
      EXPECT_NE(r["reason"].get<std::string>().find("cannot reach"), std::string::npos) << r.dump();
      continue;
    }
    ASSERT_EQ(r["status"], "ok") << r.dump();
    EXPECT_TRUE(r["check"]["passed"].get<bool>()) << r.dump();
    EXPECT_NE(p["src"], p["dst"]);
    pairs.insert(p["src"].dump() + ">" + p["dst"].dump());
    if (p["by"] == "sm-chase") {
      EXPECT_GT(median(r, "latency_cycles"), kMinPeerCycles) << p.dump();
      EXPECT_LT(median(r, "latency_cycles"), kMaxPeerCycles) << p.dump();
    } else {
      EXPECT_GT(median(r, "gbps"), kMinGbps) << p.dump();
      EXPECT_LT(median(r, "gbps"), kMaxGbps) << p.dump();
    }
  }
  EXPECT_EQ(pairs.size(), std::size_t(n * (n - 1))) << "both directions of every pair";
  ASSERT_EQ(report["findings"].size(), 4u);
  for (const auto& f : report["findings"])
    EXPECT_NE(f["text"].get<std::string>().find("slowest pair"), std::string::npos);
}

TEST(P2p, OneGpuIsSkippedSayingWhy) {
  if (device_count() != 1) GTEST_SKIP() << "this machine has " << device_count() << " GPUs, not one";
  const auto path = fixtures::temp_dir("gpu-p2p-one") / "report.json";
  const auto r = fixtures::run({"p2p", "--quick", "--json", path.string()});
  EXPECT_EQ(r.code, 3) << r.err;
  const Json report = tkprobe::read_report(path);
  ASSERT_EQ(report["results"].size(), 1u);
  EXPECT_EQ(report["results"][0]["status"], "skipped");
  EXPECT_NE(report["results"][0]["reason"].get<std::string>().find("needs two or more"), std::string::npos)
      << report["results"][0].dump();
}
