// `tkprobe roofline` without a GPU: ncu's raw CSV read, the ceilings read from a report, and each
// kernel's binding ceiling. Two profiles: roofline_raw.csv, three launches made up in ncu's layout to
// sit at chosen shares of the H200 baseline's ceilings; h100_*.{csv,json}, recorded by gpu.roofline
// on an H100 (roofline_target's launches and the ceilings measured in the same run).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>

#include "src/errors.hpp"
#include "src/roofline.hpp"
#include "tests/fixtures.hpp"

namespace rl = tkprobe::roofline;
using tkprobe::Json;

namespace {

const std::string kSource = TKPROBE_SOURCE_DIR;
const std::string kCsv = kSource + "/tests/host/data/ncu/roofline_raw.csv";
const std::string kSuite = kSource + "/results/h200/suite.json";
const std::string kH100Csv = kSource + "/tests/host/data/ncu/h100_target_raw.csv";
const std::string kH100Ceilings = kSource + "/tests/host/data/ncu/h100_ceilings.json";

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

rl::Ceilings h200() { return rl::ceilings_from_report(tkprobe::read_report(kSuite), kSuite); }

const rl::Bound& bound(const std::vector<rl::Bound>& b, const std::string& name) {
  for (const rl::Bound& x : b)
    if (x.ceiling.name == name) return x;
  throw std::runtime_error("no bound " + name);
}

// The CSV without one metric's column, as ncu prints it for a chip that lacks the metric (every
// cell is quoted, so `","` separates cells).
std::string drop_column(const std::string& text, const std::string& metric) {
  std::istringstream in(text);
  std::string line, out;
  std::size_t at = std::string::npos;
  const std::string sep = "\",\"";
  for (std::size_t n = 0; std::getline(in, line); ++n) {
    std::vector<std::string> cells;
    for (std::size_t from = 0, to; from != std::string::npos; from = to == std::string::npos ? to : to + sep.size()) {
      to = line.find(sep, from);
      cells.push_back(line.substr(from, to == std::string::npos ? to : to - from));
    }
    if (line.rfind("\"ID\"", 0) == 0) at = std::find(cells.begin(), cells.end(), metric) - cells.begin();
    if (line.front() == '"' && at < cells.size()) cells.erase(cells.begin() + at);
    for (std::size_t i = 0; i < cells.size(); ++i) out += (i ? sep : "") + cells[i];
    out += "\n";
  }
  return out;
}

}  // namespace

TEST(Roofline, ReadsNcusRawCsv) {
  const auto kernels = rl::parse_ncu_csv(text_of(kCsv), "fixture");
  ASSERT_EQ(kernels.size(), 3u) << "the units row and ==PROF== lines are no kernels";
  EXPECT_EQ(kernels[0].name, "gemm_bf16<128, 256>") << "a quoted comma stays in the name";
  EXPECT_EQ(kernels[0].gpu, "NVIDIA H200");
  EXPECT_EQ(kernels[2].id, 2);
  const rl::Work w = rl::work_of(kernels[2]);
  EXPECT_DOUBLE_EQ(w.seconds, 2e-3);         // 2,000,000 ns
  EXPECT_DOUBLE_EQ(w.sm_clock_mhz, 1600);    // cycles per second
  EXPECT_DOUBLE_EQ(w.mufu_ops, 146484375.0 * 32);  // warp instructions x 32 threads
  EXPECT_DOUBLE_EQ(w.smem_bytes, 1e7 * 128);       // wavefronts x 128 bytes
  EXPECT_DOUBLE_EQ(rl::work_of(kernels[0]).fp32_flops, 2e9);  // an FFMA is 2 FLOP
  EXPECT_DOUBLE_EQ(rl::work_of(kernels[1]).dram_bytes(), 2e9);  // read and written
}

// ncu leaves out a metric the chip does not have (gh100 has no fp16 tensor paths): an optional one
// counts as none and is named; a required one is still an error.
TEST(Roofline, AnOptionalMetricTheChipLacksCountsAsNone) {
  const std::string text = text_of(kCsv);
  const auto kernels = rl::parse_ncu_csv(drop_column(text, "sm__ops_path_tensor_src_fp16_dst_fp16.sum"), "fixture");
  EXPECT_EQ(kernels[0].lacking, std::vector<std::string>{"sm__ops_path_tensor_src_fp16_dst_fp16.sum"});
  EXPECT_EQ(kernels[0].counters.at("sm__ops_path_tensor_src_fp16_dst_fp16.sum"), 0);
  EXPECT_THROW(rl::parse_ncu_csv(drop_column(text, "sm__ops_path_tensor_src_bf16_dst_fp32.sum"), "fixture"),
               tkprobe::UsageError);
}

TEST(Roofline, ABadProfileIsToldWhatIsMissing) {
  const std::string csv = text_of(kCsv);
  EXPECT_THROW(rl::parse_ncu_csv("==PROF== nothing\n", "empty"), tkprobe::UsageError);
  std::string lacking = csv;
  const std::string metric = "\"lts__t_bytes.sum\",";
  lacking.erase(lacking.find(metric), metric.size());
  try {
    rl::parse_ncu_csv(lacking, "lacking");
    FAIL() << "a profile without lts__t_bytes.sum parsed";
  } catch (const tkprobe::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("lts__t_bytes.sum"), std::string::npos) << e.what();
  }
  std::string garbled = csv;
  garbled.replace(garbled.find("\"1,755,000,000\""), 15, "\"fast\"");
  EXPECT_THROW(rl::parse_ncu_csv(garbled, "garbled"), tkprobe::UsageError);
}

// The committed H200 baseline's rows: HBM 4.373 TB/s (bandwidth, 8 loads in flight), L2 8.171 TB/s
// (the ladder at 55%: lines read once a pass, not the shared-lines 9.33), 127.9 shared bytes per SM
// clock, bf16 wgmma at 98.17% of 4096 FLOP per SM clock.
TEST(Roofline, TheCeilingsAreTheBaselinesBestRows) {
  const rl::Ceilings c = h200();
  EXPECT_EQ(c.gpu, "NVIDIA H200");
  EXPECT_NEAR(c.hbm_read_bytes_per_s / 1e12, 4.373, 0.001);
  EXPECT_NEAR(c.l2_bytes_per_s / 1e12, 8.171, 0.001);
  EXPECT_NEAR(c.smem_bytes_per_clock_per_sm, 127.9, 0.01);
  EXPECT_NEAR(c.tensor_flop_per_clock_per_sm.at("bf16"), 0.9817 * 4096, 0.5);
  Json bare = tkprobe::read_report(kSuite);
  bare["results"] = Json::array();
  EXPECT_THROW(rl::ceilings_from_report(bare, "bare"), tkprobe::UsageError);
}

// HBM's rate follows what a kernel writes: the read's, the copy's at half, the write's; time per byte
// linear between them.
TEST(Roofline, HbmsRateFollowsTheWrittenShare) {
  rl::Ceilings c;
  c.hbm_read_bytes_per_s = 4e12;
  c.hbm_copy_bytes_per_s = 2e12;
  c.hbm_write_bytes_per_s = 1e12;
  EXPECT_DOUBLE_EQ(rl::hbm_rate(c, 0), 4e12);
  EXPECT_DOUBLE_EQ(rl::hbm_rate(c, 0.5), 2e12);
  EXPECT_DOUBLE_EQ(rl::hbm_rate(c, 1), 1e12);
  EXPECT_DOUBLE_EQ(rl::hbm_rate(c, 0.25), 1 / (0.5 / 4e12 + 0.5 / 2e12));
  c.hbm_copy_bytes_per_s = c.hbm_write_bytes_per_s = 0;
  EXPECT_DOUBLE_EQ(rl::hbm_rate(c, 0.7), 4e12) << "the read's where the report has no other";
}

TEST(Roofline, OverlapInterpolatesTheProbesRows) {
  const std::map<double, double> rows{{0, 100}, {8, 90}, {16, 50}};
  EXPECT_DOUBLE_EQ(rl::overlap_pct(rows, 0), 100);
  EXPECT_DOUBLE_EQ(rl::overlap_pct(rows, 12), 70);
  EXPECT_DOUBLE_EQ(rl::overlap_pct(rows, 64), 50) << "the last row beyond them";
  EXPECT_DOUBLE_EQ(rl::overlap_pct({{0, 90}, {4, 91}}, 4), 100) << "never above the reference";
}

// The fixture's launches were made to sit at 80% of the bf16 ceiling, 91% of HBM, and under an
// overlap ceiling of 16 ex2 per thread per wgmma (78.5% of the reference on the H200: 89.6%).
TEST(Roofline, TheBindingCeilingIsTheLongestLeastTime) {
  const rl::Ceilings c = h200();
  const auto kernels = rl::parse_ncu_csv(text_of(kCsv), "fixture");
  const auto gemm = rl::bounds(rl::work_of(kernels[0]), c);
  EXPECT_EQ(gemm.front().ceiling.name, "tensor bf16");
  EXPECT_NEAR(gemm.front().pct, 80, 0.1);
  const auto copy = rl::bounds(rl::work_of(kernels[1]), c);
  EXPECT_EQ(copy.front().ceiling.name, "hbm");
  EXPECT_NEAR(copy.front().pct, 100 * 2e9 / c.hbm_copy_bytes_per_s / 500e-6, 0.1) << "half written: the copy's rate";
  const auto attention = rl::bounds(rl::work_of(kernels[2]), c);
  EXPECT_EQ(attention.front().ceiling.name, "overlap");
  EXPECT_EQ(attention[1].ceiling.name, "tensor bf16");
  EXPECT_NEAR(attention.front().pct / attention[1].pct, 99.5 / 78.5, 0.01);
}

// A tensor ceiling is per clock: the same work at a lower clock takes longer, and the kernel's share
// of the ceiling rises with it; HBM's does not move.
TEST(Roofline, ClockBoundCeilingsFollowTheKernelsClock) {
  const rl::Ceilings c = h200();
  rl::Kernel k = rl::parse_ncu_csv(text_of(kCsv), "fixture")[0];
  const double at_1755 = bound(rl::bounds(rl::work_of(k), c), "tensor bf16").pct;
  const double hbm_1755 = bound(rl::bounds(rl::work_of(k), c), "hbm").pct;
  k.counters["sm__cycles_elapsed.avg.per_second"] = 1.17e9;
  EXPECT_NEAR(bound(rl::bounds(rl::work_of(k), c), "tensor bf16").pct, at_1755 * 1755 / 1170, 1e-9);
  EXPECT_DOUBLE_EQ(bound(rl::bounds(rl::work_of(k), c), "hbm").pct, hbm_1755);
}

TEST(Roofline, TheCommandReadsAnImportedCsv) {
  const auto dir = fixtures::temp_dir("roofline-import");
  const auto run = fixtures::run({"roofline", "--import", kCsv, "--ceilings", kSuite, "--json", (dir / "r.json").string()});
  ASSERT_EQ(run.code, 0) << run.err;
  const Json report = tkprobe::read_report(dir / "r.json");
  ASSERT_EQ(report["results"].size(), 3u);
  EXPECT_EQ(report["results"][1]["metrics"]["binding"], "hbm");
  const auto picked = fixtures::run({"roofline", "--import", kCsv, "--ceilings", kSuite, "--kernel", "^(copy|attention)",
                                     "--launch-skip", "1", "--format", "json"});
  ASSERT_EQ(picked.code, 0) << picked.err;
  const Json only = Json::parse(picked.out);
  ASSERT_EQ(only["results"].size(), 1u);
}

// Without --ceilings, the suite baseline of the GPU the profile names, from results/*/suite.json; a GPU
// with none, or a profile that names no GPU, is refused, naming the baselines there are.
TEST(Roofline, TheDefaultCeilingsAreTheSuiteOfTheProfilesGpu) {
  for (const auto& [csv, folder] : {std::pair{kH100Csv, "h100"}, std::pair{kCsv, "h200"}}) {
    const auto run = fixtures::run({"roofline", "--import", csv, "--format", "json"});
    ASSERT_EQ(run.code, 0) << run.err;
    const std::string used = Json::parse(run.out)["tool"]["ceilings"];
    EXPECT_EQ(used, kSource + "/results/" + folder + "/suite.json");
  }
  const auto dir = fixtures::temp_dir("roofline-unknown-gpu");
  std::string csv = text_of(kCsv);
  for (std::size_t at; (at = csv.find("NVIDIA H200")) != std::string::npos;) csv.replace(at, 11, "NVIDIA B200");
  const auto none = fixtures::run({"roofline", "--import", fixtures::write(dir / "b200.csv", csv).string()});
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("no suite baseline of NVIDIA B200"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("NVIDIA H200 (h200/suite.json)"), std::string::npos) << none.err;
  const auto nameless = fixtures::run(
      {"roofline", "--import",
       fixtures::write(dir / "nameless.csv", drop_column(text_of(kCsv), "device__attribute_display_name")).string()});
  EXPECT_EQ(nameless.code, 2);
  EXPECT_NE(nameless.err.find("the profile names no GPU"), std::string::npos) << nameless.err;
}

TEST(Roofline, BadInputExitsTwoAndNoNcuExitsThree) {
  EXPECT_EQ(fixtures::run({"roofline"}).code, 2) << "neither a program nor --import";
  EXPECT_EQ(fixtures::run({"roofline", "--import", kCsv, "--ceilings", kSuite, "--", "true"}).code, 2) << "both";
  EXPECT_EQ(fixtures::run({"roofline", "--import", kCsv, "--ceilings", kSuite, "--kernel", "("}).code, 2);
  EXPECT_EQ(fixtures::run({"roofline", "--import", kSuite, "--ceilings", kSuite}).code, 2) << "a report is no CSV";
  const std::vector<std::vector<std::string>> refused{
      {"--export", "profile.csv", "--", "true"},           // not FILE.ncu-rep
      {"--export", "/no/such/folder/p.ncu-rep", "--", "true"},
      {"--import", kCsv, "--export", "p.ncu-rep"},         // nothing is profiled to keep
      {"--import", kCsv, "--profiler-range"},
      {"--launch-count", "0", "--", "true"},
      {"--launch-skip", "-1", "--", "true"},
      {"--measure-ceilings", "--ceilings", kSuite, "--", "true"},
      {"--import", kCsv, "--ceilings", "/no/such/report.json"}};
  for (const auto& options : refused) {
    std::vector<std::string> args{"roofline"};
    args.insert(args.end(), options.begin(), options.end());
    const auto r = fixtures::run(args);
    EXPECT_EQ(r.code, 2) << fmt::format("{}: {}", fmt::join(options, " "), r.err);
    EXPECT_FALSE(r.err.empty()) << fmt::format("{}: no message", fmt::join(options, " "));
  }
  const auto dir = fixtures::temp_dir("roofline-other-gpu");
  std::string csv = text_of(kCsv);
  for (std::size_t at; (at = csv.find("NVIDIA H200")) != std::string::npos;) csv.replace(at, 11, "NVIDIA H100");
  const auto other = fixtures::run({"roofline", "--import", fixtures::write(dir / "h100.csv", csv).string(),
                                    "--ceilings", kSuite});
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.err.find("NVIDIA H100"), std::string::npos) << other.err;
  const char* path = std::getenv("PATH");
  const std::string saved = path ? path : "";
  setenv("PATH", dir.c_str(), 1);  // a folder without ncu
  const auto no_ncu = fixtures::run({"roofline", "--ceilings", kSuite, "--", "true"});
  setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(no_ncu.code, 3) << no_ncu.err;
  EXPECT_NE(no_ncu.err.find("ncu"), std::string::npos) << no_ncu.err;
}

// The recording: ncu on gh100 has no fp16 tensor paths; the DSL GEMM's 2 x 8192^3 FLOPs come
// out of ops_path exactly and bind at the tensor ceiling; the HBM copy and the strided shared loads sit
// on theirs, each stride's conflict degree its own. The read's 110% is against the quick run's
// 256 MiB read (2.89 TB/s), which --measure-ceilings no longer uses for HBM.
TEST(Roofline, ARecordedProfileLandsWhereTheProbesSay) {
  const auto kernels = rl::parse_ncu_csv(text_of(kH100Csv), kH100Csv);
  const rl::Ceilings c = rl::ceilings_from_report(tkprobe::read_report(kH100Ceilings), kH100Ceilings);
  ASSERT_EQ(kernels.size(), 6u);
  EXPECT_EQ(kernels[0].gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(kernels[0].lacking.size(), 2u);
  const rl::Work gemm = rl::work_of(kernels[0]);
  EXPECT_NEAR(gemm.tensor_flops.at("bf16"), 2.0 * 8192 * 8192 * 8192, 1e-6 * 2.0 * 8192 * 8192 * 8192);
  const auto on = [&](int i) { return rl::bounds(rl::work_of(kernels[i]), c).front(); };
  EXPECT_EQ(on(0).ceiling.name, "tensor bf16") << "no overlap ceiling for an epilogue's few instructions";
  EXPECT_NEAR(on(0).pct, 98.8, 0.1);
  EXPECT_EQ(on(2).ceiling.name, "hbm");
  EXPECT_NEAR(on(2).pct, 98.9, 0.1);
  for (int i = 3; i < 6; ++i) {
    EXPECT_EQ(on(i).ceiling.name, "smem");
    EXPECT_NEAR(on(i).pct, 100.4, 0.3);
    const rl::Work w = rl::work_of(kernels[i]);
    EXPECT_NEAR(w.smem_bytes / w.smem_requested_bytes, 1 << (i - 3), 0.01) << "strides 1, 2, 4: 1-, 2-, 4-way";
  }
}
