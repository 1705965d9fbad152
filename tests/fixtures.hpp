#pragma once
// Constructed reports and in-process CLI runs, for host and GPU tests.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "src/cli.hpp"
#include "src/report.hpp"
#include "src/report_devices.hpp"
#include "src/report_set.hpp"

namespace fixtures {

// Statistics of `n` samples that all read `median`, with the given CV.
inline tkprobe::Stats flat_stats(double median, double cv) {
  tkprobe::Stats s;
  s.median = s.min = s.max = s.q1 = s.q3 = s.mean = median;
  s.cv = cv;
  s.n = 20;
  return s;
}

inline tkprobe::Result timed_result(const std::string& probe, tkprobe::Json params, double median, double cv,
                                    tkprobe::Better better = tkprobe::Better::lower) {
  if (params.is_null()) params = tkprobe::Json::object();  // `{}` in a call is null, not an empty object
  tkprobe::Result r(probe, std::move(params));
  r.metric("cycles", flat_stats(median, cv), "cycles", better);
  return r;
}

// A compute row as attention writes it: judged per clock (% of the clock peak), TFLOP/s beside it.
inline tkprobe::Result clocked_result(double pct_clock_peak, double tflops) {
  tkprobe::Result r("attention", {{"seq", 1024}, {"causal", true}});
  r.metric("pct_clock_peak", flat_stats(pct_clock_peak, 0.0002), "%", tkprobe::Better::higher);
  r.metric("tflops", flat_stats(tflops, 0.0002), "TFLOP/s", tkprobe::Better::higher);
  return r;
}

inline tkprobe::Json report(const std::vector<tkprobe::Result>& results, const std::string& gpu = "NVIDIA H200",
                            std::map<std::string, double> seconds = {}) {
  tkprobe::Report rep;
  rep.tool = tkprobe::tool_section({"tkprobe", "test"});
  rep.tool["seed"] = 1;
  rep.host = {{"hostname", "test"}, {"driver", "0"}, {"cuda_runtime", "13.0"}};
  rep.device = {{"index", 0},
                {"name", gpu},
                {"cc", "9.0"},
                {"sms", 132},
                {"l2_bytes", 62914560},
                {"smem_per_sm", 233472},
                {"smem_per_block_optin", 232448},
                {"sm_clock_max_mhz", 1980},
                {"mem_clock_mhz", 3201},
                {"power_limit_w", 700.0}};
  rep.results = results;
  rep.seconds = std::move(seconds);
  return tkprobe::to_json(rep);
}

// A report of several devices (--devices), merged as tkprobe merges its device runs' reports: each
// of `runs` is one device's (its device section naming its index), `spanning` the rows that span them.
inline tkprobe::Json several_devices(const std::vector<tkprobe::Json>& runs,
                                     const tkprobe::Json& spanning = tkprobe::Json()) {
  std::vector<tkprobe::DeviceRun> device_runs;
  for (const auto& r : runs) device_runs.push_back({r["device"], r});
  return tkprobe::merge_device_runs(runs.front()["tool"], runs.front()["host"], device_runs, spanning);
}

// A constructed report as compare reads it.
inline tkprobe::ReportSet report_set(const tkprobe::Json& report, const std::string& source = "test") {
  return tkprobe::as_report_set(report, source);
}

// A fresh, empty folder for one test's files, its own per process: ctest runs each test in a
// process of its own, side by side under -j, and tests of one file share names.
inline std::filesystem::path temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("tkprobe-test-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::filesystem::path write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

struct CliRun {
  int code;
  std::string out, err;
};

inline CliRun run(std::vector<std::string> args) {
  args.insert(args.begin(), "tkprobe");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = tkprobe::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

}  // namespace fixtures
