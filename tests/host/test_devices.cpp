// --devices without a GPU: the list's parsing, the command line each device's run gets, the child
// processes run side by side, and the report of several devices (merged, checked, split back).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "src/devices.hpp"
#include "src/errors.hpp"
#include "src/report_devices.hpp"
#include "tests/fixtures.hpp"

using tkprobe::Json;

namespace {

bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::string usage_error(std::string_view list) {
  try {
    tkprobe::parse_device_list(list);
  } catch (const tkprobe::UsageError& e) {
    return e.what();
  }
  return "";
}

// Device `index`'s run: one row of probe p (cycles, lower is better) and a finding, its own UUID.
Json device_report(int index, double cycles, const std::string& gpu = "NVIDIA H200") {
  Json r = fixtures::report({fixtures::timed_result("p", {{"s", 1}}, cycles, 0.002)}, gpu);
  r["device"]["index"] = index;
  r["device"]["uuid"] = fmt::format("GPU-0000000{}-0000-0000-0000-000000000000", index);
  r["telemetry"] = {{"p", {{"rows", 1}, {"throttled_rows", 0}, {"power_w", {300.0 + index, 310.0 + index}}}}};
  r["findings"] = Json::array({{{"probe", "p"}, {"text", fmt::format("device {} found", index)}}});
  return r;
}

// The report of a probe that spans devices: one row per ordered pair of two devices.
Json spanning_report() {
  std::vector<tkprobe::Result> rows;
  for (const auto& [src, dst] : {std::pair{0, 1}, std::pair{1, 0}}) {
    rows.push_back(fixtures::timed_result("p2p", {{"src", src}, {"dst", dst}, {"by", "sm-chase"}}, 1500, 0.002));
  }
  Json r = fixtures::report(rows);
  r["findings"] = Json::array({{{"probe", "p2p"}, {"text", "slowest pair 1->0"}}});
  return r;
}

std::vector<std::string> problems(const Json& report) { return tkprobe::report_problems(report); }

}  // namespace

TEST(DeviceList, AllOrIndicesInTheOrderGiven) {
  EXPECT_FALSE(tkprobe::parse_device_list("all").has_value());
  EXPECT_EQ(*tkprobe::parse_device_list("0"), std::vector<int>{0});
  EXPECT_EQ(*tkprobe::parse_device_list("5,0,2"), (std::vector<int>{5, 0, 2}));
}

TEST(DeviceList, MalformedListsAndRepeatsSayWhatIsValid) {
  for (const char* bad : {"", ",", "0,", ",1", "0,,1", "x", "-1", "1.5", "0 1", "ALL", "1234567890"}) {
    const std::string why = usage_error(bad);
    EXPECT_TRUE(mentions(why, "give all, or device indices separated by commas")) << "'" << bad << "': " << why;
  }
  EXPECT_TRUE(mentions(usage_error("0,2,0"), "device 0 is given twice")) << usage_error("0,2,0");
}

TEST(DeviceList, AnIndexPastTheMachinesDevicesIsNoDeviceNamingTheValidOnes) {
  EXPECT_EQ(tkprobe::select_devices(std::nullopt, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(tkprobe::select_devices(std::vector<int>{2, 0}, 3), (std::vector<int>{2, 0}));
  try {
    tkprobe::select_devices(std::vector<int>{0, 5}, 2);
    FAIL() << "device 5 of 2 was accepted";
  } catch (const tkprobe::NoDeviceError& e) {
    EXPECT_TRUE(mentions(e.what(), "device 5 not present: this machine has 2 CUDA device(s) (valid: 0..1)"))
        << e.what();
  }
}

// Each device's run is the same command on one device, with its own report file and the run's seed.
TEST(DeviceRun, CommandLineIsTheRunsOnOneDevice) {
  const std::vector<std::string> args{"tkprobe",  "all",  "--devices=all", "--quick", "--json",   "suite.json",
                                      "--probes", "info", "--probes",      "l2",      "--seed=7", "--timeout",
                                      "3"};
  EXPECT_EQ(tkprobe::device_run_args(args, 2, "/tmp/d2.json", 42, {"info", "l2"}),
            (std::vector<std::string>{"tkprobe", "all", "--quick", "--timeout", "3", "--device", "2", "--json",
                                      "/tmp/d2.json", "--seed", "42", "--probes", "info,l2"}));
  const std::vector<std::string> probe{"tkprobe", "wgmma", "--devices", "0,1", "--shape", "64x256", "--json", "-"};
  EXPECT_EQ(tkprobe::device_run_args(probe, 1, "d1.json", 5, {}),
            (std::vector<std::string>{"tkprobe", "wgmma", "--shape", "64x256", "--device", "1", "--json", "d1.json",
                                      "--seed", "5"}));
}

// Started together, two one-second children end in about one second, each with its own exit and
// messages; a child killed by a signal says so.
TEST(DeviceRun, ChildrenRunSideBySide) {
  const auto dir = fixtures::temp_dir("side-by-side");
  const std::vector<std::string> logs{(dir / "a.log").string(), (dir / "b.log").string(), (dir / "c.log").string()};
  const auto start = std::chrono::steady_clock::now();
  const auto exits = tkprobe::run_side_by_side("/bin/sh",
                                               {{"sh", "-c", "sleep 1; echo first >&2; exit 3"},
                                                {"sh", "-c", "sleep 1; echo second >&2"},
                                                {"sh", "-c", "kill -9 $$"}},
                                               logs);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.8) << "the children ran one after another";
  ASSERT_EQ(exits.size(), 3u);
  EXPECT_EQ(exits[0].code, 3);
  EXPECT_FALSE(exits[0].signaled);
  EXPECT_EQ(exits[1].code, 0);
  EXPECT_TRUE(exits[2].signaled);
  EXPECT_EQ(exits[2].code, 128 + 9);
  std::ifstream a(logs[0]), b(logs[1]);
  std::string line;
  EXPECT_TRUE(std::getline(a, line) && line == "first") << line;
  EXPECT_TRUE(std::getline(b, line) && line == "second") << line;
  EXPECT_THROW(tkprobe::run_side_by_side("/nonexistent/tkprobe", {{"tkprobe"}}, {logs[0]}), std::runtime_error);
}

TEST(DevicesReport, EachDevicesRowsAndFindingsNameItAndItsSectionHoldsItsTelemetry) {
  const Json j = fixtures::several_devices({device_report(0, 100), device_report(1, 103)}, spanning_report());
  EXPECT_TRUE(problems(j).empty()) << problems(j).front();
  EXPECT_FALSE(j.contains("device"));
  ASSERT_EQ(j["devices"].size(), 2u);
  EXPECT_EQ(j["devices"][1]["device"]["uuid"], "GPU-00000001-0000-0000-0000-000000000000");
  EXPECT_EQ(j["devices"][1]["telemetry"]["p"]["power_w"], Json::array({301.0, 311.0}));
  ASSERT_EQ(j["results"].size(), 4u);
  EXPECT_EQ(j["results"][1]["device"], 1);
  EXPECT_EQ(std::next(j["results"][1].begin()).key(), "device") << "right after the probe, where a reader looks";
  EXPECT_FALSE(j["results"][2].contains("device")) << "rows that span devices name none";
  EXPECT_EQ(j["findings"][1], (Json{{"probe", "p"}, {"device", 1}, {"text", "device 1 found"}}));
  EXPECT_EQ(j["results"][2]["params"]["src"], 0);
}

// Split back, each device's part is the report its run wrote: rows, findings, telemetry, section.
TEST(DevicesReport, SplitsBackIntoEachDevicesReportThroughTheFile) {
  const std::vector<Json> runs{device_report(0, 100), device_report(3, 103)};
  const auto dir = fixtures::temp_dir("devices-report");
  tkprobe::write_file_atomic(dir / "r.json", tkprobe::report_text(fixtures::several_devices(runs, spanning_report())));
  const auto parts = tkprobe::report_parts(tkprobe::read_report(dir / "r.json"));
  ASSERT_EQ(parts.size(), 3u);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(parts[k].device, runs[k]["device"]["index"]);
    for (const char* section : {"device", "telemetry", "results", "findings", "host"}) {
      EXPECT_EQ(parts[k].report[section], runs[k][section]) << section;
    }
  }
  EXPECT_EQ(parts[2].device, tkprobe::kSpansDevices);
  EXPECT_EQ(parts[2].report["results"], spanning_report()["results"]);
  EXPECT_TRUE(parts[2].report["device"].is_null());
  const Json one = device_report(0, 100);
  ASSERT_EQ(tkprobe::report_parts(one).size(), 1u);
  EXPECT_EQ(tkprobe::report_parts(one)[0].report, one) << "a report of one device is its own one part";
}

TEST(DevicesReport, ProblemsTheSchemaCannotSee) {
  const Json good = fixtures::several_devices({device_report(0, 100), device_report(1, 100)});
  Json twice = good;
  twice["devices"][1]["device"]["uuid"] = twice["devices"][0]["device"]["uuid"];
  EXPECT_TRUE(mentions(problems(twice).at(0), "one card listed twice")) << problems(twice).at(0);
  Json same_index = good;
  same_index["devices"][1]["device"]["index"] = 0;
  EXPECT_FALSE(problems(same_index).empty());
  Json stray = good;
  stray["results"][0]["device"] = 7;
  EXPECT_TRUE(mentions(problems(stray).at(0), "/results/0/device: device 7 is not in \"devices\""))
      << problems(stray).at(0);
  Json both = good;
  both["device"] = good["devices"][0]["device"];
  EXPECT_TRUE(mentions(problems(both).at(0), "both")) << problems(both).at(0);
  Json neither = good;
  neither.erase("devices");
  EXPECT_FALSE(problems(neither).empty());
  Json tagged_single = device_report(0, 100);
  tagged_single["results"][0]["device"] = 0;
  EXPECT_TRUE(mentions(problems(tagged_single).at(0), "no \"devices\" section")) << problems(tagged_single).at(0);
  // One device's rows may repeat another's params: the device is part of a row's identity.
  EXPECT_TRUE(problems(good).empty());
}
