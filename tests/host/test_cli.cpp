// The command line's contract, in-process: every bad input gets one line naming what is wrong
// and what is valid, the documented exit code, and leaves no report file behind.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "src/probe.hpp"
#include "tests/fixtures.hpp"

using fixtures::run;

namespace {

bool has_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

TEST(Cli, VersionNamesTheCommit) {
  const auto r = run({"--version"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("tkprobe 0.", 0), 0u) << r.out;
  EXPECT_TRUE(mentions(r.out, "(")) << "the commit it was built from: " << r.out;
  EXPECT_TRUE(mentions(r.out, "built with the CUDA 1")) << "the CUDA runtime it was built with: " << r.out;
  EXPECT_TRUE(mentions(r.out, "for drivers supporting CUDA ") && mentions(r.out, "this machine's driver: "))
      << "the drivers it is for, and the one here (or none): " << r.out;
}

TEST(Cli, HelpAndListSucceed) {
  const auto help = run({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_TRUE(mentions(help.out, "smem-banks"));
  const auto list = run({"list"});
  EXPECT_EQ(list.code, 0);
  for (const char* probe : {"info", "smem-latency", "smem-banks", "compare", "all"}) {
    EXPECT_TRUE(mentions(list.out, probe)) << probe;
  }
}

TEST(Cli, UnknownProbeListsTheValidOnes) {
  const auto r = run({"smem-bogus"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(mentions(r.err, "unknown probe or command 'smem-bogus'"));
  EXPECT_TRUE(mentions(r.err, "valid: attention, bandwidth, based, cluster, copy-engines, gemm, info, l2, mem-latency, mma-sync, occupancy, overlap, p2p, quadrants, smem-banks, smem-latency, tensor-cores, tma-reduce, tma-swizzle, wgmma, wgmma-layout"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST(Cli, UnknownOptionPointsAtHelp) {
  const auto r = run({"smem-banks", "--bogus"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(mentions(r.err, "--bogus"));
  EXPECT_TRUE(mentions(r.err, "tkprobe smem-banks --help"));
}

TEST(Cli, StrideZeroIsRefusedByBothProbes) {
  const auto banks = run({"smem-banks", "--stride", "0"});
  EXPECT_EQ(banks.code, 2);
  EXPECT_TRUE(mentions(banks.err, "--stride 0: give strides from 1 to 64")) << banks.err;
  const auto latency = run({"smem-latency", "--stride", "0"});
  EXPECT_EQ(latency.code, 2);
  EXPECT_TRUE(mentions(latency.err, "multiple of 4")) << latency.err;
  EXPECT_EQ(run({"smem-latency", "--stride", "6"}).code, 2);
}

TEST(Cli, BadCommonOptionValues) {
  const auto format = run({"smem-banks", "--format", "xml"});
  EXPECT_EQ(format.code, 2);
  EXPECT_TRUE(mentions(format.err, "--format")) << format.err;
  EXPECT_TRUE(mentions(format.err, "csv,json,markdown,table")) << "lists the valid formats: " << format.err;
  EXPECT_EQ(run({"smem-banks", "--width", "3"}).code, 2);
  EXPECT_EQ(run({"smem-banks", "--warps", "0"}).code, 2);
  EXPECT_EQ(run({"smem-banks", "--warps", "33"}).code, 2);
  EXPECT_EQ(run({"smem-latency", "--footprint", "0"}).code, 2);
  EXPECT_EQ(run({"smem-latency", "--footprint", "201"}).code, 2);
  EXPECT_EQ(run({"smem-banks", "--min-time", "0"}).code, 2);
  EXPECT_EQ(run({"smem-banks", "--device", "-1"}).code, 2);
  EXPECT_EQ(run({}).code, 2);
}

TEST(Cli, JsonIntoMissingFolderIsRefusedBeforeAnyWork) {
  const auto r = run({"smem-banks", "--json", "/nonexistent-tkprobe-dir/out.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(mentions(r.err, "does not exist"));
  EXPECT_FALSE(std::filesystem::exists("/nonexistent-tkprobe-dir"));
}

TEST(Cli, AbsentDeviceExitsThreeAndWritesNoReport) {
  const auto dir = fixtures::temp_dir("cli-device");
  const auto out = dir / "r.json";
  const auto r = run({"smem-banks", "--device", "7", "--json", out.string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(mentions(r.err, has_gpu() ? "device 7 not present" : "no CUDA device")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 0) << "no temporary file left";
}

TEST(Cli, InfoWithoutGpuExitsThreeWithTheCudaError) {
  const auto r = run({"info"});
  if (has_gpu()) {
    EXPECT_EQ(r.code, 0);
    EXPECT_TRUE(mentions(r.out, "sms"));
  } else {
    EXPECT_EQ(r.code, 3);
    EXPECT_TRUE(mentions(r.err, "no CUDA device: "));
    EXPECT_TRUE(mentions(r.err, "cudaError")) << "carries the CUDA error name: " << r.err;
  }
}

TEST(Cli, CompareNeedsTwoFiles) {
  const auto r = run({"compare", "only-one.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(mentions(r.err, "new is required")) << r.err;
}

TEST(Cli, MemoryProbesRefuseEmptyFootprintsAndUnknownKernels) {
  const auto map = run({"l2", "--map", "/no/such/folder/map.csv"});
  EXPECT_EQ(map.code, 2);
  EXPECT_TRUE(mentions(map.err, "the folder /no/such/folder does not exist")) << map.err;
  const auto footprint = run({"mem-latency", "--footprint", "0"});
  EXPECT_EQ(footprint.code, 2);
  EXPECT_TRUE(mentions(footprint.err, "--footprint 0: give KiB from 16")) << footprint.err;
  for (const char* bad : {"1", "100000000"}) {
    const auto size = run({"bandwidth", "--size", bad});
    EXPECT_EQ(size.code, 2) << bad;
    EXPECT_TRUE(mentions(size.err, "give 64 to 32768 MiB")) << size.err;
  }
  const auto level = run({"bandwidth", "--level", "hbm,dram"});
  EXPECT_EQ(level.code, 2);
  EXPECT_TRUE(mentions(level.err, "--level")) << level.err;
  const auto filler = run({"overlap", "--filler", "fma,sin"});
  EXPECT_EQ(filler.code, 2);
  EXPECT_TRUE(mentions(filler.err, "--filler")) << filler.err;
  EXPECT_EQ(run({"overlap", "--warpgroups", "4"}).code, 2);
  for (const char* size : {"1", "17"}) {
    const auto sizes = run({"cluster", "--sizes", size});
    EXPECT_EQ(sizes.code, 2) << size;
    EXPECT_TRUE(mentions(sizes.err, "--sizes")) << sizes.err;
  }
  const auto warps = run({"quadrants", "--warps", "0"});
  EXPECT_EQ(warps.code, 2);
  EXPECT_TRUE(mentions(warps.err, "--warps")) << warps.err;
  const auto kernel = run({"occupancy", "--kernel", "memcpy"});
  EXPECT_EQ(kernel.code, 2);
  EXPECT_TRUE(mentions(kernel.err, "--kernel")) << kernel.err;
}

TEST(Cli, TmaSwizzleRefusesModesAndBoxesTheTmaCannotTake) {
  const auto mode = run({"tma-swizzle", "--mode", "16B"});
  EXPECT_EQ(mode.code, 2);
  EXPECT_TRUE(mentions(mode.err, "give none, 32B, 64B, 128B or all")) << mode.err;
  const auto span = run({"tma-swizzle", "--mode", "128B", "--box", "64x128"});
  EXPECT_EQ(span.code, 2);
  EXPECT_TRUE(mentions(span.err, "128B swizzle needs the inner extent (128 x 2 B = 256 B) <= 128 B")) << span.err;
  EXPECT_EQ(run({"tma-swizzle", "--box", "8x3", "--mode", "none"}).code, 2);
  EXPECT_EQ(run({"tma-swizzle", "--box", "0x8"}).code, 2);
  EXPECT_EQ(run({"tma-swizzle", "--dtype", "fp64"}).code, 2);
}

TEST(Cli, WgmmaLayoutRefusesUnknownModesMajorsAndTypes) {
  const auto mode = run({"wgmma-layout", "--swizzle", "16B"});
  EXPECT_EQ(mode.code, 2);
  EXPECT_TRUE(mentions(mode.err, "--swizzle 16B: give none, 32B, 64B, 128B or all")) << mode.err;
  const auto major = run({"wgmma-layout", "--major", "row"});
  EXPECT_EQ(major.code, 2);
  EXPECT_TRUE(mentions(major.err, "--major row: give k, mn or all")) << major.err;
  const auto dtype = run({"wgmma-layout", "--dtype", "fp16"});
  EXPECT_EQ(dtype.code, 2);
  EXPECT_TRUE(mentions(dtype.err, "only bf16 is decoded")) << dtype.err;
}

TEST(Cli, CopyEnginesRefusesBoxesTheTmaOrTheSwizzleCannotTake) {
  for (const char* box : {"64by64", "0x64", "64x0", "257x64", "64x512"}) {
    const auto r = run({"copy-engines", "--box", box});
    EXPECT_EQ(r.code, 2) << box;
    EXPECT_TRUE(mentions(r.err, "give ROWSxCOLS in bf16 elements, each from 1 to 256 (the TMA's box limit)")) << r.err;
  }
  for (const char* box : {"64x128", "64x32", "64x12"}) {
    const auto span = run({"copy-engines", "--box", box});
    EXPECT_EQ(span.code, 2) << box;
    EXPECT_TRUE(mentions(span.err, "must be the 128B swizzle's span, 128 B (COLS = 64)")) << span.err;
  }
  const auto atom = run({"copy-engines", "--box", "4x64"});
  EXPECT_EQ(atom.code, 2);
  EXPECT_TRUE(mentions(atom.err, "give ROWS a multiple of 8")) << atom.err;
  EXPECT_EQ(run({"copy-engines", "--box", "64x64,64x72"}).code, 2) << "every box in the list is checked";
}

TEST(Cli, CopyEnginesRefusesZeroCtasPerSmAndUnknownEngines) {
  const auto ctas = run({"copy-engines", "--ctas-per-sm", "1,0"});
  EXPECT_EQ(ctas.code, 2);
  EXPECT_TRUE(mentions(ctas.err, "--ctas-per-sm 0: give CTAs per SM from 1 to 32")) << ctas.err;
  const auto engine = run({"copy-engines", "--engine", "dma"});
  EXPECT_EQ(engine.code, 2);
  EXPECT_TRUE(mentions(engine.err, "--engine dma: give tma, cp-async, warp or all")) << engine.err;
}

TEST(Cli, GemmRefusesShapesOffItsTileAndPartialShapes) {
  const auto off = run({"gemm", "--m", "1000", "--n", "256", "--k", "64"});
  EXPECT_EQ(off.code, 2);
  EXPECT_TRUE(mentions(off.err, "M = 1000: give a positive multiple of 128 (the kernel's tile)")) << off.err;
  const auto k = run({"gemm", "--m", "128", "--n", "256", "--k", "100"});
  EXPECT_EQ(k.code, 2);
  EXPECT_TRUE(mentions(k.err, "K = 100: give a positive multiple of 64")) << k.err;
  const auto partial = run({"gemm", "--m", "128"});
  EXPECT_EQ(partial.code, 2);
  EXPECT_TRUE(mentions(partial.err, "give all three")) << partial.err;
}

TEST(Cli, AttentionShapeOptionsAreAllOrNothingAndNotWithSweep) {
  const auto dir = fixtures::temp_dir("cli-attention");
  const auto out = dir / "r.json";
  const auto with_sweep = run({"attention", "--sweep", "--seq", "1024", "--json", out.string()});
  EXPECT_EQ(with_sweep.code, 2);
  EXPECT_TRUE(mentions(with_sweep.err, "--sweep runs the standard shapes: give it no --batch")) << with_sweep.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  for (const char* option : {"--causal", "--kv-heads"}) {
    std::vector<std::string> args{"attention", "--sweep", option};
    if (std::string(option) == "--kv-heads") args.push_back("2");
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << option;
    EXPECT_TRUE(mentions(r.err, "--sweep runs the standard shapes")) << r.err;
  }
  for (const std::vector<std::string>& partial :
       {std::vector<std::string>{"attention", "--batch", "1", "--heads", "4"},
        std::vector<std::string>{"attention", "--batch", "1", "--heads", "4", "--seq", "128"},
        std::vector<std::string>{"attention", "--causal"}, std::vector<std::string>{"attention", "--kv-heads", "2"}}) {
    const auto r = run(partial);
    EXPECT_EQ(r.code, 2) << partial.back();
    EXPECT_TRUE(mentions(r.err, "--batch, --heads, --seq, --head-dim: give all four")) << r.err;
  }
}

TEST(Cli, AttentionBadKernelAndNumbersAreRefused) {
  const auto kernel = run({"attention", "--kernel", "flash"});
  EXPECT_EQ(kernel.code, 2);
  EXPECT_TRUE(mentions(kernel.err, "--kernel")) << kernel.err;
  EXPECT_TRUE(mentions(kernel.err, "wgmma") && mentions(kernel.err, "mma-sync")) << kernel.err;
  const auto not_a_number = run({"attention", "--batch", "two", "--heads", "4", "--seq", "128", "--head-dim", "64"});
  EXPECT_EQ(not_a_number.code, 2);
  EXPECT_TRUE(mentions(not_a_number.err, "--batch")) << not_a_number.err;
}

TEST(Cli, AttentionPassesAreNamedAndTheBackwardNeedsTheWgmmaKernel) {
  const auto bad = run({"attention", "--pass", "sideways"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(mentions(bad.err, "--pass") && mentions(bad.err, "fwd+bwd")) << bad.err;
  for (const char* pass : {"bwd", "fwd+bwd", "all"}) {
    const auto portable = run({"attention", "--pass", pass, "--kernel", "mma-sync"});
    EXPECT_EQ(portable.code, 2) << pass;
    EXPECT_TRUE(mentions(portable.err, "the backward is written for the wgmma kernel only")) << portable.err;
  }
}

TEST(Cli, AttentionDqPathsAreNamedAndNeedTheBackward) {
  const auto bad = run({"attention", "--pass", "bwd", "--dq", "sideways"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(mentions(bad.err, "--dq") && mentions(bad.err, "fastest") && mentions(bad.err, "deterministic") &&
              mentions(bad.err, "reduce"))
      << bad.err;
  for (const char* path : {"reduce", "deterministic"}) {
    const auto forward = run({"attention", "--dq", path});
    EXPECT_EQ(forward.code, 2) << path;
    EXPECT_TRUE(mentions(forward.err, std::string("--dq ") + path + " picks the backward's dQ path")) << forward.err;
  }
}

// --dtype: bf16 (the default, all the suite runs) or e4m3, the wgmma forward at head dim 128.
TEST(Cli, AttentionDtypeIsNamedAndE4m3IsTheWgmmaForwardAtHeadDim128) {
  const auto bad = run({"attention", "--dtype", "fp16"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(mentions(bad.err, "--dtype") && mentions(bad.err, "bf16") && mentions(bad.err, "e4m3")) << bad.err;
  const auto portable = run({"attention", "--dtype", "e4m3", "--kernel", "mma-sync"});
  EXPECT_EQ(portable.code, 2);
  EXPECT_TRUE(mentions(portable.err, "the e4m3 forward is written for the wgmma kernel only")) << portable.err;
  for (const char* pass : {"bwd", "fwd+bwd", "all"}) {
    const auto backward = run({"attention", "--dtype", "e4m3", "--pass", pass});
    EXPECT_EQ(backward.code, 2) << pass;
    EXPECT_TRUE(mentions(backward.err, "the e4m3 kernel is a forward")) << backward.err;
  }
  const auto d64 = run({"attention", "--dtype", "e4m3", "--batch", "1", "--heads", "4", "--seq", "128", "--head-dim", "64"});
  EXPECT_EQ(d64.code, 2);
  EXPECT_TRUE(mentions(d64.err, "head dim = 64: the e4m3 forward takes 128")) << d64.err;
}

TEST(Cli, AttentionShapesTheKernelsRefuseExitTwoWithTheRule) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--batch", "0", "--heads", "4", "--seq", "128", "--head-dim", "64"}, "batch = 0: give a positive number"},
      {{"--batch", "1", "--heads", "4", "--seq", "-5", "--head-dim", "64"}, "seq = -5: give a positive number"},
      {{"--batch", "1", "--heads", "4", "--kv-heads", "3", "--seq", "128", "--head-dim", "64"},
       "the query heads must be a multiple of the key/value heads"},
      {{"--batch", "1", "--heads", "4", "--kv-heads", "0", "--seq", "128", "--head-dim", "64"},
       "kv heads = 0: give a positive number"},
      {{"--batch", "1", "--heads", "4", "--seq", "128", "--head-dim", "96"}, "head dim = 96: give 64 or 128"},
      {{"--batch", "1", "--heads", "70000", "--kv-heads", "1", "--seq", "128", "--head-dim", "64"}, "at most 65535"},
  };
  for (const auto& [options, why] : cases) {
    std::vector<std::string> args{"attention"};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--kernel", "mma-sync"});
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << why;
    EXPECT_TRUE(mentions(r.err, why)) << r.err;
    EXPECT_TRUE(mentions(r.err, "with the mma-sync kernel")) << r.err;
  }
}

TEST(Cli, AttentionValidShapeGetsPastValidation) {
  const auto r = run({"attention", "--batch", "1", "--heads", "4", "--kv-heads", "2", "--seq", "100", "--head-dim",
                      "64", "--causal", "--quick"});
  if (has_gpu()) {
    EXPECT_NE(r.code, 2) << r.err;
  } else {
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_TRUE(mentions(r.err, "no CUDA device")) << r.err;
  }
}

TEST(Cli, MemLatencyFootprintsOutsideSixteenKibToFourGibAreRefused) {
  for (const char* footprint : {"8", "4194305"}) {
    const auto r = run({"mem-latency", "--footprint", footprint});
    EXPECT_EQ(r.code, 2) << footprint;
    EXPECT_TRUE(mentions(r.err, "give KiB from 16 to 4194304")) << r.err;
  }
}

// Range errors name the valid range in words, never as DBL_MAX's 300 digits; negative seeds and
// devices are refused rather than wrapped.
TEST(Cli, CommonOptionsRefuseOutOfRangeValuesReadably) {
  const std::vector<std::vector<std::string>> cases = {{"--device", "-1"}, {"--seed", "-1"},  {"--min-time", "0"},
                                                       {"--max-noise", "-2"}, {"--timeout", "nan"}, {"--seed", "1.5"}};
  for (const auto& c : cases) {
    const auto r = run({"smem-latency", c[0], c[1]});
    EXPECT_EQ(r.code, 2) << c[0] << " " << c[1];
    EXPECT_TRUE(mentions(r.err, c[0])) << r.err;
    EXPECT_TRUE(mentions(r.err, "'" + c[1] + "'")) << r.err;
    EXPECT_FALSE(mentions(r.err, "1.797")) << r.err;
    EXPECT_LT(r.err.size(), 200u) << r.err;
  }
}

TEST(Cli, BasedShapeOptionsAreAllOrNothingAndNotWithSweep) {
  const auto dir = fixtures::temp_dir("cli-based");
  const auto out = dir / "r.json";
  const auto with_sweep = run({"based", "--sweep", "--seq", "1024", "--json", out.string()});
  EXPECT_EQ(with_sweep.code, 2);
  EXPECT_TRUE(mentions(with_sweep.err, "--sweep runs the standard shapes: give it no --batch")) << with_sweep.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  const auto value_dim = run({"based", "--sweep", "--value-dim", "64"});
  EXPECT_EQ(value_dim.code, 2);
  EXPECT_TRUE(mentions(value_dim.err, "--sweep runs the standard shapes")) << value_dim.err;
  for (const std::vector<std::string>& partial :
       {std::vector<std::string>{"based", "--batch", "1", "--heads", "4"},
        std::vector<std::string>{"based", "--seq", "128"}, std::vector<std::string>{"based", "--value-dim", "64"}}) {
    const auto r = run(partial);
    EXPECT_EQ(r.code, 2) << partial.back();
    EXPECT_TRUE(mentions(r.err, "--batch, --heads, --seq: give all three")) << r.err;
  }
  const auto not_a_number = run({"based", "--batch", "two", "--heads", "4", "--seq", "128"});
  EXPECT_EQ(not_a_number.code, 2);
  EXPECT_TRUE(mentions(not_a_number.err, "--batch")) << not_a_number.err;
}

TEST(Cli, BasedShapesTheKernelRefusesExitTwoWithTheRule) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--batch", "0", "--heads", "4", "--seq", "128"}, "batch = 0: give a positive number"},
      {{"--batch", "1", "--heads", "4", "--seq", "-5"}, "seq = -5: give a positive number"},
      {{"--batch", "1", "--heads", "4", "--seq", "128", "--value-dim", "96"}, "value dim = 96: give 64 or 128"},
  };
  for (const auto& [options, why] : cases) {
    std::vector<std::string> args{"based"};
    args.insert(args.end(), options.begin(), options.end());
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << why;
    EXPECT_TRUE(mentions(r.err, why)) << r.err;
  }
}

TEST(Cli, BasedValidShapeGetsPastValidation) {
  const auto r = run({"based", "--batch", "1", "--heads", "3", "--seq", "100", "--no-normalize", "--quick"});
  if (has_gpu()) {
    EXPECT_NE(r.code, 2) << r.err;
  } else {
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_TRUE(mentions(r.err, "no CUDA device")) << r.err;
  }
}

// --devices: a malformed list, a repeat, or --device beside it is a usage error before any device work.
TEST(Cli, DevicesListsAreCheckedBeforeAnyDeviceWork) {
  for (const char* bad : {"0,x", "", "1,,2", "-1", "0,1,0", "ALL"}) {
    const auto r = run({"smem-latency", "--devices", bad});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_TRUE(mentions(r.err, "--devices: '")) << r.err;
    EXPECT_TRUE(mentions(r.err, "give all, or device indices separated by commas")) << r.err;
  }
  const auto both = run({"all", "--devices", "all", "--device", "1"});
  EXPECT_EQ(both.code, 2);
  EXPECT_TRUE(mentions(both.err, "--device excludes --devices")) << both.err;
  const auto p2p = run({"p2p", "--device", "1"});
  EXPECT_EQ(p2p.code, 2);
  EXPECT_TRUE(mentions(p2p.err, "p2p measures between GPUs: choose them with --devices")) << p2p.err;
  EXPECT_EQ(run({"all", "--devices", "all", "--probes", "nope"}).code, 2);
  EXPECT_EQ(run({"wgmma", "--devices", "0,1", "--shape", "7x7"}).code, 2) << "the probe's own options first";
}

// p2p's --size-mib: MiB from 1 to 16384, refused before any device work.
TEST(Cli, P2pSizeIsRefusedOutsideItsRange) {
  for (const char* bad : {"0", "16385"}) {
    const auto r = run({"p2p", "--devices", "0,1", "--size-mib", bad});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_TRUE(mentions(r.err, "give MiB from 1 to 16384")) << r.err;
  }
  EXPECT_EQ(run({"p2p", "--devices", "0,1", "--size-mib", "x"}).code, 2);
}

TEST(Cli, DevicesPastTheMachinesExitThreeAndWriteNoReport) {
  const auto dir = fixtures::temp_dir("cli-devices");
  const auto out = dir / "r.json";
  const auto r = run({"smem-banks", "--devices", "0,99", "--json", out.string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(mentions(r.err, has_gpu() ? "device 99 not present" : "no CUDA device")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_EQ(run({"p2p", "--devices", "99"}).code, 3);
}

// The top-level README is a front door (at most 15 KB, detail in results/README.md and each probe's
// README), and its probe table links every probe's README.
TEST(Cli, ReadmeIsAFrontDoorToEveryProbe) {
  const std::filesystem::path root(TKPROBE_SOURCE_DIR);
  EXPECT_LT(std::filesystem::file_size(root / "README.md"), 15000u);
  std::ifstream in(root / "README.md");
  const std::string readme((std::istreambuf_iterator<char>(in)), {});
  for (const auto& p : tkprobe::make_probes()) {
    const std::string link = "(probes/" + p->name() + "/README.md)";
    EXPECT_TRUE(mentions(readme, link)) << p->name();
    EXPECT_TRUE(std::filesystem::exists(root / "probes" / p->name() / "README.md")) << p->name();
  }
}
