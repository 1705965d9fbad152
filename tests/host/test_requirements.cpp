// Where each probe can run: the capability rules against GPUs of every architecture since Ampere,
// for the default build (sm_90a and sm_80 machine code) and one that adds PTX for compute_80.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <stdexcept>

#include "src/probe.hpp"
#include "src/requirements.hpp"
#include "tests/host/cli_fixtures.hpp"
#include "tests/host/fake_gpu.hpp"

namespace tkprobe {
namespace {

const KernelImages kDefault = parse_architectures("90a-real;80-real");
const KernelImages kWithPtx = parse_architectures("90a-real,80-real,80-virtual");
const Requirements kPortable{};
const Requirements kWgmma{.sm90a = {Sm90aFeature::wgmma}};

TEST(Requirements, ReadsCMakeArchitectures) {
  const KernelImages i = parse_architectures("90a-real;80-real;80-virtual;100");
  ASSERT_EQ(i.sass.size(), 3u);
  EXPECT_TRUE(i.sass[0].arch_specific);
  EXPECT_EQ(i.sass[1].cc, 80);
  EXPECT_EQ(i.sass[2].cc, 100);
  EXPECT_EQ(i.ptx, (std::vector<int>{80, 100}));
  EXPECT_TRUE(parse_architectures("native").any);
  EXPECT_THROW(parse_architectures("90x-real"), std::invalid_argument);
}

TEST(Requirements, Sm90aCodeRunsOnHopperAlone) {
  EXPECT_EQ(why_not_runnable(kWgmma, fake::gpu("NVIDIA H200", 90), kDefault), "");
  EXPECT_EQ(why_not_runnable(kWgmma, fake::gpu("NVIDIA A10", 86), kDefault),
            "needs sm_90a (wgmma); this GPU (device 0, NVIDIA A10) is sm_86");
  for (int cc : {80, 89, 100, 120}) EXPECT_NE(why_not_runnable(kWgmma, fake::gpu("x", cc), kWithPtx), "") << cc;
  // A PTX-only build skips its Hopper rows on Hopper too: what a newer GPU sees.
  EXPECT_EQ(why_not_runnable(kWgmma, fake::gpu("NVIDIA H200", 90), parse_architectures("80-virtual")),
            "needs sm_90a (wgmma); this binary is built for PTX for compute_80 alone");
  EXPECT_EQ(why_not_runnable(kPortable, fake::gpu("NVIDIA H200", 90), parse_architectures("80-virtual")), "");
  const Requirements cluster{.sm90a = {Sm90aFeature::clusters, Sm90aFeature::tma}};
  EXPECT_EQ(why_not_runnable(cluster, fake::gpu("NVIDIA B200", 100), kWithPtx),
            "needs sm_90a (clusters, TMA); this GPU (device 0, NVIDIA B200) is sm_100");
}

TEST(Requirements, PortableCodeRunsWhereTheBinaryHoldsAnImage) {
  // sm_80 machine code runs on every 8.x; sm_90a's on 9.0; nothing of the default build on 10.0 or 12.0.
  for (int cc : {80, 86, 89, 90}) EXPECT_EQ(why_not_runnable(kPortable, fake::gpu("x", cc), kDefault), "") << cc;
  EXPECT_EQ(why_not_runnable(kPortable, fake::gpu("NVIDIA GeForce RTX 5090", 120), kDefault),
            "this binary holds no kernel image for sm_120 (sm_90a, sm_80): rebuild with CMAKE_CUDA_ARCHITECTURES "
            "holding 120-real, or a -virtual architecture for the driver to compile");
  // PTX for compute_80: the driver compiles it for any newer GPU.
  for (int cc : {100, 120}) EXPECT_EQ(why_not_runnable(kPortable, fake::gpu("x", cc), kWithPtx), "") << cc;
  EXPECT_EQ(why_not_runnable(kPortable, fake::gpu("Tesla T4", 75), kWithPtx),
            "needs sm_80 or newer; this GPU (device 0, Tesla T4) is sm_75");
  EXPECT_NE(why_not_runnable(kPortable, fake::gpu("x", 90), parse_architectures("80-real")), "");
}

TEST(Requirements, TheMatrixSaysWhichImageRuns) {
  EXPECT_EQ(image_use(kPortable, 86, kWithPtx), ImageUse::machine_code);  // sm_80's, on any 8.x
  EXPECT_EQ(image_use(kPortable, 90, kWithPtx), ImageUse::machine_code);  // sm_90a's
  for (int cc : {100, 120}) EXPECT_EQ(image_use(kPortable, cc, kWithPtx), ImageUse::ptx) << cc;
  EXPECT_EQ(image_use(kPortable, 120, kDefault), ImageUse::none);
  EXPECT_EQ(image_use(kPortable, 90, parse_architectures("80-virtual")), ImageUse::ptx);
  EXPECT_EQ(image_use(kWgmma, 90, kDefault), ImageUse::machine_code);
  for (int cc : {80, 100}) EXPECT_EQ(image_use(kWgmma, cc, kWithPtx), ImageUse::none) << cc;
}

TEST(Requirements, ListAndHelpSayWhatEachProbeNeeds) {
  EXPECT_EQ(describe(kPortable), "sm_80 or newer");
  EXPECT_EQ(describe(kWgmma), "sm_90a (wgmma)");
  std::set<std::string> portable;
  for (const auto& p : make_probes()) {
    if (p->needs().sm90a.empty()) portable.insert(p->name());
    if (p->name() == "bandwidth") {
      EXPECT_EQ(needs_text(*p), "sm_80 or newer; TMA copy rows: sm_90a (TMA)");
    }
  }
  // The probes a PTX build runs on any GPU since Ampere, some of their rows aside (row_needs).
  const std::set<std::string> expected{"attention", "bandwidth",   "copy-engines", "decode",    "info",
                                       "l2",        "mem-latency", "mma-sync",     "occupancy", "p2p",
                                       "quadrants", "smem-banks",  "smem-latency"};
  EXPECT_EQ(portable, expected);
}

// The line of `text` that starts with `word` and a space, or "".
std::string line_of(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(word + " ")) return line;
  }
  return "";
}

TEST(Requirements, ListAndHelpShowThem) {
  const auto list = fixtures::run({"list"});
  EXPECT_TRUE(cli_fixtures::mentions(line_of(list.out, "wgmma"), " sm_90a ")) << list.out;
  EXPECT_TRUE(cli_fixtures::mentions(line_of(list.out, "bandwidth"), " sm_80+* ")) << list.out;
  EXPECT_TRUE(cli_fixtures::mentions(line_of(list.out, "smem-banks"), " sm_80+ ")) << list.out;
  // The matrix: a row per set of probes that run alike; bandwidth's TMA rows as a note.
  const auto matrix = fixtures::run({"list", "--matrix"});
  EXPECT_TRUE(cli_fixtures::mentions(line_of(matrix.out, "| bandwidth"), "| ✓ [")) << matrix.out;
  EXPECT_TRUE(cli_fixtures::mentions(matrix.out, "] bandwidth's TMA copy rows skipped: they need sm_90a (TMA)."))
      << matrix.out;
  const auto bad = fixtures::run({"list", "--matrix=sometimes"});
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_TRUE(cli_fixtures::mentions(bad.err, "--matrix")) << bad.err;
  const auto help = fixtures::run({"bandwidth", "--help"});
  EXPECT_TRUE(cli_fixtures::mentions(help.out, "Needs: sm_80 or newer; TMA copy rows: sm_90a (TMA)")) << help.out;
}

}  // namespace
}  // namespace tkprobe
