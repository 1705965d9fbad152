// The command line's contract, in-process: every bad input gets one line naming what is wrong
// and what is valid, the documented exit code, and leaves no report file behind. The probes come
// from the registry; a probe's own options are tested in its folder (probes/<name>/host_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "src/probe.hpp"
#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::has_gpu;
using cli_fixtures::mentions;
using fixtures::run;

namespace {

// Every registered probe's name, sorted.
std::vector<std::string> probe_names() {
  std::vector<std::string> names;
  for (const auto& p : tkprobe::make_probes()) names.push_back(p->name());
  return names;
}

// The probes that run on one device (--device): every probe but those that span devices.
std::vector<std::string> single_device_probes() {
  std::vector<std::string> names;
  for (const auto& p : tkprobe::make_probes())
    if (!p->spans_devices()) names.push_back(p->name());
  return names;
}

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
  const auto list = run({"list"});
  EXPECT_EQ(list.code, 0);
  for (const std::string& probe : probe_names()) {
    EXPECT_TRUE(mentions(help.out, probe)) << probe;
    EXPECT_TRUE(mentions(list.out, probe)) << probe;
  }
  for (const char* command : {"compare", "all"}) EXPECT_TRUE(mentions(list.out, command)) << command;
}

TEST(Cli, UnknownProbeListsTheValidOnes) {
  const auto r = run({"no-such-probe"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(mentions(r.err, "unknown probe or command 'no-such-probe'"));
  std::string valid = "valid: ";
  for (const std::string& probe : probe_names()) valid += (valid.size() > 7 ? ", " : "") + probe;
  EXPECT_TRUE(mentions(r.err, valid)) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST(Cli, UnknownOptionPointsAtHelp) {
  for (const std::string& probe : probe_names()) {
    const auto r = run({probe, "--bogus"});
    EXPECT_EQ(r.code, 2) << probe;
    EXPECT_TRUE(mentions(r.err, "--bogus")) << r.err;
    EXPECT_TRUE(mentions(r.err, "tkprobe " + probe + " --help")) << r.err;
  }
}

TEST(Cli, BadCommonOptionValues) {
  for (const std::string& probe : single_device_probes()) {
    const auto format = run({probe, "--format", "xml"});
    EXPECT_EQ(format.code, 2) << probe;
    EXPECT_TRUE(mentions(format.err, "--format")) << format.err;
    EXPECT_TRUE(mentions(format.err, "csv,json,markdown,table")) << "lists the valid formats: " << format.err;
    EXPECT_EQ(run({probe, "--min-time", "0"}).code, 2) << probe;
    EXPECT_EQ(run({probe, "--device", "-1"}).code, 2) << probe;
  }
  EXPECT_EQ(run({}).code, 2);
}

TEST(Cli, JsonIntoMissingFolderIsRefusedBeforeAnyWork) {
  for (const std::string& probe : probe_names()) {
    const auto r = run({probe, "--json", "/nonexistent-tkprobe-dir/out.json"});
    EXPECT_EQ(r.code, 2) << probe;
    EXPECT_TRUE(mentions(r.err, "does not exist")) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists("/nonexistent-tkprobe-dir"));
}

TEST(Cli, AbsentDeviceExitsThreeAndWritesNoReport) {
  for (const std::string& probe : single_device_probes()) {
    const auto dir = fixtures::temp_dir("cli-device-" + probe);
    const auto out = dir / "r.json";
    const auto r = run({probe, "--device", "7", "--json", out.string()});
    EXPECT_EQ(r.code, 3) << probe;
    EXPECT_TRUE(mentions(r.err, has_gpu() ? "device 7 not present" : "no CUDA device")) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << probe;
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 0) << "no temporary file left";
  }
}

TEST(Cli, CompareNeedsTwoFiles) {
  const auto r = run({"compare", "only-one.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(mentions(r.err, "new is required")) << r.err;
}

// Range errors name the valid range in words, never as DBL_MAX's 300 digits; negative seeds and
// devices are refused rather than wrapped.
TEST(Cli, CommonOptionsRefuseOutOfRangeValuesReadably) {
  const std::vector<std::vector<std::string>> cases = {{"--device", "-1"}, {"--seed", "-1"},  {"--min-time", "0"},
                                                       {"--max-noise", "-2"}, {"--timeout", "nan"}, {"--seed", "1.5"}};
  for (const std::string& probe : single_device_probes()) {
    for (const auto& c : cases) {
      const auto r = run({probe, c[0], c[1]});
      EXPECT_EQ(r.code, 2) << probe << " " << c[0] << " " << c[1];
      EXPECT_TRUE(mentions(r.err, c[0])) << r.err;
      EXPECT_TRUE(mentions(r.err, "'" + c[1] + "'")) << r.err;
      EXPECT_FALSE(mentions(r.err, "1.797")) << r.err;
      EXPECT_LT(r.err.size(), 200u) << r.err;
    }
  }
}

// --devices: a malformed list, a repeat, or --device beside it is a usage error before any device work.
TEST(Cli, DevicesListsAreCheckedBeforeAnyDeviceWork) {
  for (const std::string& probe : probe_names()) {
    for (const char* bad : {"0,x", "", "1,,2", "-1", "0,1,0", "ALL"}) {
      const auto r = run({probe, "--devices", bad});
      EXPECT_EQ(r.code, 2) << probe << " " << bad;
      EXPECT_TRUE(mentions(r.err, "--devices: '")) << r.err;
      EXPECT_TRUE(mentions(r.err, "give all, or device indices separated by commas")) << r.err;
    }
  }
  const auto both = run({"all", "--devices", "all", "--device", "1"});
  EXPECT_EQ(both.code, 2);
  EXPECT_TRUE(mentions(both.err, "--device excludes --devices")) << both.err;
  EXPECT_EQ(run({"all", "--devices", "all", "--probes", "nope"}).code, 2);
}

TEST(Cli, DevicesPastTheMachinesExitThreeAndWriteNoReport) {
  for (const std::string& probe : single_device_probes()) {
    const auto dir = fixtures::temp_dir("cli-devices-" + probe);
    const auto out = dir / "r.json";
    const auto r = run({probe, "--devices", "0,99", "--json", out.string()});
    EXPECT_EQ(r.code, 3) << probe;
    EXPECT_TRUE(mentions(r.err, has_gpu() ? "device 99 not present" : "no CUDA device")) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << probe;
  }
}

// The top-level README is a front door: its probe table links every registered probe's README.
TEST(Cli, ReadmeIsAFrontDoorToEveryProbe) {
  const std::filesystem::path root(TKPROBE_SOURCE_DIR);
  std::ifstream in(root / "README.md");
  const std::string readme((std::istreambuf_iterator<char>(in)), {});
  for (const std::string& probe : probe_names()) {
    const std::string link = "(probes/" + probe + "/README.md)";
    EXPECT_TRUE(mentions(readme, link)) << probe;
    EXPECT_TRUE(std::filesystem::exists(root / "probes" / probe / "README.md")) << probe;
  }
}
