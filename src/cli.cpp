#include "src/cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "src/baseline.hpp"
#include "src/claims.hpp"
#include "src/compare.hpp"
#include "src/compare_output.hpp"
#include "src/devices.hpp"
#include "src/errors.hpp"
#include "src/fleet.hpp"
#include "src/format.hpp"
#include "src/probe.hpp"
#include "src/report_devices.hpp"

namespace tkprobe {
namespace {

const std::map<std::string, Format> kFormats = {
    {"table", Format::table}, {"json", Format::json}, {"markdown", Format::markdown}, {"csv", Format::csv}};

constexpr double kQuickTimeoutS = 0.5;  // --quick's time budget per measurement, unless --timeout is given

// The harness's sampling rule from the command line; --quick trades samples for time.
TimingConfig timing_config(const CommonOptions& o) {
  TimingConfig c;
  c.min_time_s = o.min_time_s;
  c.max_noise = o.max_noise_pct / 100.0;
  c.timeout_s = o.timeout_s;
  c.flush_l2 = o.flush_l2;
  if (o.quick) {
    c.min_samples = 5;
    c.warmup = 1;
    if (!o.timeout_given) c.timeout_s = std::min(c.timeout_s, kQuickTimeoutS);
  }
  return c;
}

struct CompareArgs {
  std::string base, now;
  CompareOptions options;
  std::vector<std::string> probes;
  std::string format = "markdown";
  std::string junit_path, markdown_path;
};

struct BaselineArgs {
  std::string out;
  std::vector<std::string> runs;
};

struct FleetArgs {
  std::vector<std::string> reports;
  FleetOptions options;
  std::vector<std::string> probes;
  std::string format = "markdown";
  std::string markdown_path;
};

// A number that can bound a measurement or a gate: finite and above zero. CLI11's PositiveNumber
// lets "nan" through, and a NaN threshold would pass every row.
const CLI::Validator kFinitePositive(
    [](std::string& text) {
      double x = 0;
      try {
        std::size_t used = 0;
        x = std::stod(text, &used);
        if (used != text.size()) return std::string("'" + text + "' is not a number");
      } catch (const std::exception&) {
        return std::string("'" + text + "' is not a number");
      }
      return std::isfinite(x) && x > 0 ? std::string() : "'" + text + "' must be a finite number above 0";
    },
    "FINITE>0");

// A whole number from 0 up to `max`; CLI11's own range check prints DBL_MAX as its upper bound, and
// an unsigned option would take "-1" as 2^64 - 1.
CLI::Validator whole_number_up_to(unsigned long long max) {
  return CLI::Validator(
      [max](std::string& text) {
        const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        const unsigned long long x = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
        if (digits && errno == 0 && x <= max) return std::string();
        return fmt::format("'{}' must be a whole number from 0 to {}", text, max);
      },
      "0..N");
}

// A --devices list: "all", or indices separated by commas, none twice (parse_device_list).
const CLI::Validator kDeviceList(
    [](std::string& text) {
      try {
        parse_device_list(text);
        return std::string();
      } catch (const UsageError& e) {
        return std::string(e.what());
      }
    },
    "all|N,N,...");

void add_common_options(CLI::App& cmd, CommonOptions& o) {
  auto* device = cmd.add_option("--device", o.device, "CUDA device index")
                     ->check(whole_number_up_to(std::numeric_limits<int>::max()));
  cmd.add_option("--devices", o.devices,
                 "Run on several GPUs side by side, one report: all, or indices such as 0,2,5 (each row names its "
                 "device)")
      ->check(kDeviceList)
      ->excludes(device);
  cmd.add_option("--json", o.json_path, "Write the JSON report to FILE ('-' for stdout)");
  cmd.add_option_function<std::string>(
         "--format", [&o](const std::string& name) { o.format = kFormats.at(name); },
         "Output format: table, json, markdown or csv")
      ->check(CLI::IsMember(kFormats));
  cmd.add_flag("--quick", o.quick,
               "CI-sized run: fewer configurations and samples, and 0.5 s per measurement unless --timeout says");
  cmd.add_option("--seed", o.seed, "Seed for random inputs (default: fresh each run, recorded in the report)")
      ->check(whole_number_up_to(std::numeric_limits<std::uint64_t>::max()));
  cmd.add_option("--min-time", o.min_time_s, "Least measured seconds per measurement")->check(kFinitePositive);
  cmd.add_option("--max-noise", o.max_noise_pct, "Stop sampling once the CV is under this percentage")
      ->check(kFinitePositive);
  cmd.add_option("--timeout", o.timeout_s, "Seconds after which a measurement stops even if noisy")
      ->check(kFinitePositive);
  cmd.add_flag("--flush-l2", o.flush_l2, "Evict L2 before each sample");
}

std::string probe_names(const std::vector<std::unique_ptr<Probe>>& probes) {
  std::string names;
  for (const auto& p : probes) names += (names.empty() ? "" : ", ") + p->name();
  return names;
}

std::string valid_commands(const std::vector<std::unique_ptr<Probe>>& probes) {
  return probe_names(probes) + ", all, claims, list, compare, baseline, fleet";
}

// The probes --probes names; an unknown name is a usage error that lists the valid ones.
std::set<std::string> chosen_probes(const std::vector<std::string>& names,
                                    const std::vector<std::unique_ptr<Probe>>& probes) {
  std::set<std::string> chosen;
  for (const auto& name : names) {
    const bool known =
        std::any_of(probes.begin(), probes.end(), [&](const auto& p) { return p->name() == name; });
    if (!known) throw UsageError(fmt::format("--probes: unknown probe '{}' (valid: {})", name, probe_names(probes)));
    chosen.insert(name);
  }
  return chosen;
}

int print_list(std::ostream& out, const std::vector<std::unique_ptr<Probe>>& probes) {
  std::size_t width = 0;
  for (const auto& p : probes) width = std::max(width, p->name().size());
  for (const auto& p : probes) out << fmt::format("{:<{}}  {}\n", p->name(), width, p->summary());
  out << fmt::format("\n{:<{}}  {}\n{:<{}}  {}\n{:<{}}  {}\n{:<{}}  {}\n", "all", width,
                     "run every probe above (or --probes a,b)", "compare", width,
                     "judge a report against a baseline: tkprobe compare BASE NEW", "baseline", width,
                     "make a baseline from several runs: tkprobe baseline --out FILE RUN RUN...", "fleet", width,
                     "find the card unlike the others: tkprobe fleet REPORT REPORT...");
  return 0;
}

// Output files are checked before any report is read, and written whole or not at all.
int run_compare(CompareArgs& args, const std::vector<std::unique_ptr<Probe>>& probes, std::ostream& out) {
  args.options.probes = chosen_probes(args.probes, probes);
  if (!args.junit_path.empty()) require_writable_target(args.junit_path, "--junit");
  if (!args.markdown_path.empty()) require_writable_target(args.markdown_path, "--markdown");
  const Comparison c = compare_reports(read_report_set(args.base), read_report_set(args.now), args.options);
  const std::string markdown = to_markdown(c);
  out << (args.format == "json" ? to_json(c).dump(2) + "\n" : markdown);
  if (!args.junit_path.empty()) write_file_atomic(args.junit_path, to_junit(c));
  if (!args.markdown_path.empty()) write_file_atomic(args.markdown_path, markdown);
  return static_cast<int>(c.failed() ? Exit::check_failed : Exit::ok);
}

// Every report is read before anything is written; the summary file is written whole or not at all.
int run_fleet(FleetArgs& args, const std::vector<std::unique_ptr<Probe>>& probes, std::ostream& out) {
  args.options.probes = chosen_probes(args.probes, probes);
  if (!args.markdown_path.empty()) require_writable_target(args.markdown_path, "--markdown");
  std::vector<ReportSet> reports;  // each file alone: fleet merges a card's reports itself, by its UUID
  for (const auto& path : args.reports) {
    for (const auto& file : report_files(path)) reports.push_back(as_report_set(read_report(file), file.string()));
  }
  const Fleet f = fleet_of(reports, args.options);
  const std::string markdown = fleet_markdown(f);
  out << (args.format == "json" ? fleet_json(f).dump(2) + "\n" : markdown);
  if (!args.markdown_path.empty()) write_file_atomic(args.markdown_path, markdown);
  return static_cast<int>(f.failed() ? Exit::check_failed : Exit::ok);
}

int run_baseline(const BaselineArgs& args, std::ostream& out) {
  require_writable_target(args.out, "--out");
  std::vector<ReportSet> runs;
  for (const auto& path : args.runs) runs.push_back(read_report_set(path));
  const Json baseline = make_baseline(runs);
  write_file_atomic(args.out, report_text(baseline));
  out << fmt::format("{}: {} rows from {} runs (kept run {}, {})\n", args.out, baseline["results"].size(),
                     runs.size(), baseline["tool"]["baseline"]["kept"].get<int>() + 1,
                     runs[baseline["tool"]["baseline"]["kept"].get<std::size_t>()].source);
  const double threshold = CompareOptions{}.threshold_pct;
  const auto unsteady = unsteady_rows(baseline, threshold);
  if (!unsteady.empty()) {
    out << fmt::format("warning: {} row(s) drifted more than {}% over these runs; compare holds them to {}% at the "
                       "{}% threshold, so a run at the far end of their drift fails with the code unchanged:\n",
                       unsteady.size(), max_drift_band_pct(threshold), max_drift_band_pct(threshold), threshold);
    for (const Json* r : unsteady) {
      const std::string metric = (*r)["primary"];
      out << fmt::format("  {} {}: {} drifted {:.1f}%\n", (*r)["probe"].get<std::string>(), params_text((*r)["params"]),
                         metric, (*r)["metrics"][metric]["drift_pct"].get<double>());
    }
  }
  return static_cast<int>(Exit::ok);
}

// A result that carries no figures: a probe that could not run, and why.
Result without_figures(const Probe& p, Status status, std::string reason) {
  Result r(p.name());
  r.status = status;
  r.reason = std::move(reason);
  return r;
}

std::string unsupported_device(const Probe& p, const DeviceInfo& device) {
  const std::string cc = fmt::format("{}.{}", p.min_cc() / 10, p.min_cc() % 10);
  const std::string needs = p.max_cc() == p.min_cc()
                                ? fmt::format("compute capability {} exactly (its sm_{}a code runs nowhere else)", cc,
                                              p.min_cc())
                                : fmt::format("compute capability {} or newer", cc);
  return fmt::format("needs {}; device {} ({}) is {}.{}", needs, device.index, device.name, device.cc_major,
                     device.cc_minor);
}

std::uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) | rd();
}

Report new_report(const std::vector<std::string>& args, std::uint64_t seed, const DeviceInfo& device) {
  Report report;
  report.tool = tool_section(args);
  report.tool["seed"] = seed;
  report.host = host_section(device.driver);
  report.device = to_json(device);
  return report;
}

// Checks made before any device work: the report's folder, every probe's options; the seed drawn.
void prepare(const std::vector<Probe*>& probes, CommonOptions& o) {
  if (!o.json_path.empty() && o.json_path != "-") require_writable_target(o.json_path);
  for (const Probe* p : probes) p->validate();
  if (!o.seed_given) o.seed = fresh_seed();
}

Json probe_list(const std::vector<Probe*>& probes) {
  Json names = Json::array();
  for (const Probe* p : probes) names.push_back(p->name());
  return names;
}

// What decides a run's exit code besides its rows.
struct Outcome {
  bool lacked_device = false, runtime_error = false;
  void add(const Outcome& o) {
    lacked_device |= o.lacked_device;
    runtime_error |= o.runtime_error;
  }
};

// Why `p` cannot run in `ctx`, or "": one that spans devices needs two or more, and every device
// it runs on needs the compute capability its code is built for.
std::string why_not(const Probe& p, const ProbeContext& ctx) {
  if (p.spans_devices() && ctx.across.size() < 2) {
    return ctx.across.empty()
               ? fmt::format("measures between GPUs: select two or more with --devices (this run has one, device {})",
                             ctx.device.index)
               : fmt::format("measures between GPUs: --devices selected one (device {}); it needs two or more",
                             ctx.device.index);
  }
  std::vector<const DeviceInfo*> devices{&ctx.device};
  for (const DeviceSlot& slot : ctx.across) devices.push_back(&slot.info);
  for (const DeviceInfo* d : devices) {
    if (d->cc() < p.min_cc() || d->cc() > p.max_cc()) return unsupported_device(p, *d);
  }
  return "";
}

// Every probe in turn: one that cannot run here gets a `skipped` row saying why, one that meets a
// CUDA error a `failed` row.
Outcome run_each(const std::vector<Probe*>& probes, ProbeContext& ctx, std::ostream& err) {
  Outcome outcome;
  for (Probe* p : probes) {
    if (const std::string why = why_not(*p, ctx); !why.empty()) {
      outcome.lacked_device = true;
      ctx.add(without_figures(*p, Status::skipped, why));
      continue;
    }
    try {
      p->run(ctx);
    } catch (const CudaError& e) {
      outcome.runtime_error = true;
      ctx.add(without_figures(*p, Status::failed, e.what()));
      err << "tkprobe: " << p->name() << ": " << e.what() << '\n';
    }
  }
  return outcome;
}

int exit_code(const Outcome& outcome, const Json& report) {
  const auto& rows = report["results"];
  const bool any_failed = std::any_of(rows.begin(), rows.end(), [](const Json& r) { return r["status"] == "failed"; });
  if (outcome.runtime_error) return static_cast<int>(Exit::runtime);
  if (any_failed) return static_cast<int>(Exit::check_failed);
  return static_cast<int>(outcome.lacked_device ? Exit::no_device : Exit::ok);
}

void emit(const Json& report, const CommonOptions& o, std::ostream& out) {
  print_report(out, report, o.json_path == "-" ? Format::json : o.format);
  if (!o.json_path.empty() && o.json_path != "-") write_file_atomic(o.json_path, report_text(report));
}

// `tkprobe all` without --probes (`suite`) on `devices` devices: the probes in_suite.
void keep_suite(std::vector<Probe*>& probes, bool suite, std::size_t devices) {
  if (suite) std::erase_if(probes, [&](const Probe* p) { return !in_suite(*p, devices); });
}

// Usage errors first (before any device work), then the device, then every probe.
int run_probes(std::vector<Probe*> probes, bool suite, CommonOptions& o, const std::vector<std::string>& args,
               std::ostream& out, std::ostream& err) {
  keep_suite(probes, suite, 1);
  prepare(probes, o);
  const DeviceInfo device = query_device(o.device);
  TK_CUDA(cudaSetDevice(device.index));
  Report report = new_report(args, o.seed, device);
  report.tool["probes"] = probe_list(probes);

  Progress progress;
  Harness harness(timing_config(o), device, progress);
  std::mt19937_64 rng(o.seed);
  ProbeContext context{o, device, harness, rng, report};
  const Outcome outcome = run_each(probes, context, err);
  const Json j = to_json(report);
  emit(j, o, out);
  return exit_code(outcome, j);
}

// A fresh folder for the device runs' reports and messages, removed with everything in it.
struct ScratchFolder {
  std::filesystem::path path;
  ScratchFolder() {
    std::string name = (std::filesystem::temp_directory_path() / "tkprobe-devices-XXXXXX").string();
    if (!mkdtemp(name.data())) throw std::runtime_error(fmt::format("cannot make a folder {}", name));
    path = name;
  }
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
};

std::string device_text(const DeviceInfo& d) { return fmt::format("{} ({}, {})", d.index, d.name, d.pci_bus_id); }

// Each device's run of `probes`: this executable again, once per device, all at once
// (src/devices.hpp says why), each device's messages passed on after it ends, every line marked
// with its device. A run that exits 4, dies or writes no report makes this one a runtime error.
std::vector<DeviceRun> run_each_device(const std::vector<Probe*>& probes, bool from_all,
                                       const std::vector<DeviceInfo>& devices, const CommonOptions& o,
                                       const std::vector<std::string>& args, std::ostream& err, Outcome& outcome) {
  std::vector<DeviceRun> runs;
  for (const auto& d : devices) runs.push_back({to_json(d), nullptr});
  if (probes.empty()) return runs;
  const ScratchFolder scratch;
  std::vector<std::string> names;
  for (const Probe* p : probes) names.push_back(p->name());
  std::vector<std::vector<std::string>> commands;
  std::vector<std::string> reports, logs;
  std::string which;
  for (const auto& d : devices) {
    reports.push_back((scratch.path / fmt::format("device{}.json", d.index)).string());
    logs.push_back((scratch.path / fmt::format("device{}.log", d.index)).string());
    commands.push_back(device_run_args(args, d.index, reports.back(), o.seed, from_all ? names : std::vector<std::string>{}));
    which += (which.empty() ? "" : ", ") + device_text(d);
  }
  err << fmt::format("tkprobe: running on {} device(s) side by side: {}\n", devices.size(), which);
  const std::vector<ChildExit> exits = run_side_by_side(self_executable(), commands, logs);
  for (std::size_t k = 0; k < devices.size(); ++k) {
    std::ifstream log(logs[k]);
    for (std::string line; std::getline(log, line);) err << fmt::format("[device {}] {}\n", devices[k].index, line);
    const bool wrote = std::filesystem::exists(reports[k]);
    if (wrote) runs[k].report = read_report(reports[k]);
    const ChildExit& e = exits[k];
    outcome.lacked_device |= e.code == int(Exit::no_device);
    if (!wrote || e.signaled || e.code == int(Exit::runtime) || e.code == int(Exit::usage)) {
      outcome.runtime_error = true;
      err << fmt::format("tkprobe: device {}'s run {} {}{}\n", devices[k].index, e.signaled ? "was killed, exit" : "exited",
                         e.code, wrote ? "" : ", and wrote no report");
    }
  }
  return runs;
}

// The probes that span devices, here, once every device's own run is done: a harness on each device.
Json run_across(const std::vector<Probe*>& probes, const std::vector<DeviceInfo>& devices, const CommonOptions& o,
                const std::vector<std::string>& args, std::ostream& err, Outcome& outcome) {
  Progress progress;
  std::vector<std::unique_ptr<Harness>> harnesses;
  std::vector<DeviceSlot> slots;
  for (const auto& d : devices) {
    TK_CUDA(cudaSetDevice(d.index));  // the harness's stream and events belong to the current device
    harnesses.push_back(std::make_unique<Harness>(timing_config(o), d, progress));
    slots.push_back({d, *harnesses.back()});
  }
  TK_CUDA(cudaSetDevice(devices.front().index));
  Report report = new_report(args, o.seed, devices.front());
  std::mt19937_64 rng(o.seed);
  ProbeContext context{o, devices.front(), *harnesses.front(), rng, report, slots};
  outcome.add(run_each(probes, context, err));
  for (std::size_t k = 0; k < devices.size(); ++k) {
    cudaSetDevice(devices[k].index);
    harnesses[k].reset();
  }
  return to_json(report);
}

// --devices: each device's own run (probes of one device), then the probes that span devices, one
// report. `from_all`: the command is `tkprobe all`; `suite`: without --probes.
int run_on_devices(std::vector<Probe*> probes, bool from_all, bool suite, CommonOptions& o,
                   const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  prepare(probes, o);
  std::vector<DeviceInfo> devices;
  for (int index : select_devices(parse_device_list(o.devices), cuda_device_count())) {
    devices.push_back(query_device(index));
  }
  keep_suite(probes, suite, devices.size());
  const auto spans = [](const Probe* p) { return p->spans_devices(); };
  std::vector<Probe*> own, across;
  std::partition_copy(probes.begin(), probes.end(), std::back_inserter(across), std::back_inserter(own), spans);

  Json tool = tool_section(args);
  tool["seed"] = o.seed;
  tool["probes"] = probe_list(probes);
  Outcome outcome;
  const auto runs = run_each_device(own, from_all, devices, o, args, err, outcome);
  const Json spanning = across.empty() ? Json() : run_across(across, devices, o, args, err, outcome);
  const Json j = merge_device_runs(std::move(tool), host_section(devices.front().driver), runs, spanning);
  emit(j, o, out);
  return exit_code(outcome, j);
}

// One probe run for `claims`, in this process: its report (whatever its exit), or the exit code
// that stops `claims` (a usage or runtime error, or no device at all).
struct SubRun {
  Json report;
  int code;
};

SubRun run_for_claims(const ClaimRun& run, const CommonOptions& o, bool full, std::ostream& err) {
  std::vector<std::string> args{"tkprobe", run.probe, "--json", "-", "--device", std::to_string(o.device), "--seed",
                                std::to_string(o.seed)};
  if (!full) args.push_back("--quick");
  args.insert(args.end(), run.args.begin(), run.args.end());
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream sub_out, sub_err;
  const int code = run_cli(int(argv.size()), argv.data(), sub_out, sub_err);
  const bool stops = code == int(Exit::usage) || code == int(Exit::runtime) || sub_out.str().empty();
  if (stops || code != int(Exit::ok)) err << sub_err.str();
  // The run writes the report as a file holds it (version 3, in columns): decoded as read_report does.
  return {stops ? Json() : parse_report(sub_out.str(), fmt::format("{}'s report", run.probe)), code};
}

// What the claims read: a report's "device", "host" and "results", merged over the claims' probe runs
// (quick unless `full`) or read from a report, and the probes behind them. `code` is set where a run
// could give no report (the exit code to return), `lacked_device` where a probe needed another GPU.
struct ClaimsInput {
  Json report;
  Json probes = Json::array();
  std::optional<int> code;
  bool lacked_device = false;
};

ClaimsInput measure_claims(CommonOptions& o, bool full, std::ostream& err) {
  ClaimsInput in;
  in.report = {{"device", nullptr}, {"host", nullptr}, {"results", Json::array()}};
  for (const ClaimRun& run : claim_runs()) {
    err << fmt::format("claims: {} {}...\n", run.probe, full ? "" : "--quick");
    const SubRun sub = run_for_claims(run, o, full, err);
    if (sub.report.is_null()) return {Json(), Json::array(), sub.code, false};
    in.lacked_device |= sub.code == int(Exit::no_device);
    for (const auto& r : sub.report["results"]) in.report["results"].push_back(r);
    in.report["device"] = sub.report["device"];
    in.report["host"] = sub.report["host"];
    in.probes.push_back(run.probe);
  }
  return in;
}

// `tkprobe claims`: the claims judged from fresh probe runs, or from a report given with --from (a
// `tkprobe all` run, the committed baseline: no GPU needed).
int run_claims(CommonOptions& o, bool full, const std::string& from, const std::vector<std::string>& args,
               std::ostream& out, std::ostream& err) {
  if (!o.json_path.empty() && o.json_path != "-") require_writable_target(o.json_path);
  if (!o.seed_given) o.seed = fresh_seed();
  Report report;
  report.tool = tool_section(args);
  report.tool["seed"] = o.seed;
  ClaimsInput in;
  if (from.empty()) {
    in = measure_claims(o, full, err);
    if (in.code) return *in.code;
  } else {
    in.report = read_report(from);
    if (has_devices(in.report)) {
      throw UsageError(fmt::format("--from {}: a report of several devices (--devices); the claims are judged for one "
                                   "GPU: give a report made with --device N",
                                   from));
    }
    in.probes = in.report["tool"].value("probes", Json::array());
    report.tool["judged_from"] = from;
  }
  report.tool["probes"] = in.probes;
  const Json& measured = in.report;
  report.device = measured["device"];
  report.host = measured["host"];
  report.results = judge_claims(measured);
  int holds = 0, differs = 0, unmeasured = 0;
  for (const Result& r : report.results) {
    if (r.status != Status::ok) {
      ++unmeasured;
    } else {
      (r.metrics["verdict"] == "holds" ? holds : differs)++;
    }
  }
  report.findings.push_back({"claims", fmt::format("{} of {} claims hold on this GPU, {} differ, {} not measured",
                                                   holds, report.results.size(), differs, unmeasured)});
  const Json j = to_json(report);
  print_report(out, j, o.json_path == "-" ? Format::json : o.format);
  if (!o.json_path.empty() && o.json_path != "-") write_file_atomic(o.json_path, report_text(j));
  return static_cast<int>(in.lacked_device ? Exit::no_device : Exit::ok);
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  const std::vector<std::string> args(argv, argv + argc);
  auto probes = make_probes();
  CommonOptions common;
  CompareArgs compare;
  BaselineArgs baseline;
  FleetArgs fleet;
  std::vector<std::string> suite_probes;

  CLI::App app{"tkprobe: how close code gets to a Hopper GPU's tensor-core peak, and why.", "tkprobe"};
  app.require_subcommand(1, 1);
  app.set_version_flag("--version", std::function<std::string()>(version_text));  // asks the driver only when given
  app.footer(
      "Exit codes: 0 ok, 1 a check or regression failed, 2 usage error, 3 no suitable device, "
      "4 CUDA/runtime error.\n");
  app.add_subcommand("list", "List every probe with a one-line description");
  auto* all = app.add_subcommand("all", "Run every probe (the suite)");
  add_common_options(*all, common);
  all->add_option("--probes", suite_probes, "Run only these probes (comma-separated)")->delimiter(',');
  std::map<CLI::App*, Probe*> by_command;
  for (auto& p : probes) {
    auto* cmd = app.add_subcommand(p->name(), p->summary());
    add_common_options(*cmd, common);
    p->add_options(*cmd);
    by_command[cmd] = p.get();
  }
  bool claims_full = false;
  std::string claims_from;
  auto* claims_cmd = app.add_subcommand("claims", "The account's claims about the H100, each beside what this GPU "
                                                  "measures, with a verdict (quick runs; --full for the real thing)");
  auto* full_flag =
      claims_cmd->add_flag("--full", claims_full, "Run the probes at their full settings (minutes, not seconds)");
  claims_cmd
      ->add_option("--from", claims_from,
                   "Judge the claims from this report (a `tkprobe all` run, results/h200/suite.json) instead of "
                   "running probes: no GPU needed")
      ->excludes(full_flag);
  claims_cmd->add_option("--device", common.device, "CUDA device index")
      ->check(whole_number_up_to(std::numeric_limits<int>::max()));
  claims_cmd->add_option("--json", common.json_path, "Write the JSON report to FILE ('-' for stdout)");
  claims_cmd
      ->add_option_function<std::string>(
          "--format", [&common](const std::string& name) { common.format = kFormats.at(name); },
          "Output format: table, json, markdown or csv")
      ->check(CLI::IsMember(kFormats));
  claims_cmd->add_option("--seed", common.seed, "Seed for every probe's random inputs (default: fresh, recorded)")
      ->check(whole_number_up_to(std::numeric_limits<std::uint64_t>::max()));
  auto* cmp = app.add_subcommand("compare", "Judge a report against a baseline; exit 1 on a regression, a missing "
                                             "row or a failed check");
  cmp->add_option("base", compare.base, "Baseline: a report, or a folder of reports (results/h200)")->required();
  cmp->add_option("new", compare.now, "New report (or folder)")->required();
  cmp->add_option("--threshold", compare.options.threshold_pct, "Slowdown in percent that fails (default 5)")
      ->check(kFinitePositive);
  cmp->add_flag("--allow-device-mismatch", compare.options.allow_device_mismatch,
                "Compare reports from different GPU models");
  cmp->add_option("--probes", compare.probes, "Compare only these probes (comma-separated)")->delimiter(',');
  cmp->add_option("--format", compare.format, "stdout: markdown or json")->check(CLI::IsMember({"markdown", "json"}));
  cmp->add_option("--junit", compare.junit_path, "Also write JUnit XML (one test case per judged row) to FILE");
  cmp->add_option("--markdown", compare.markdown_path, "Also write the markdown summary to FILE (a CI job summary)");
  auto* base_cmd = app.add_subcommand("baseline", "Make a baseline from several runs of the same suite, recording "
                                                  "how far they drift");
  base_cmd->add_option("--out", baseline.out, "The baseline file to write")->required();
  base_cmd->add_option("runs", baseline.runs, "Two or more reports (or folders) of the same suite")->required();
  auto* fleet_cmd = app.add_subcommand("fleet", "Which GPU of many is not like the others: reports from several "
                                                "cards, outliers per row; exit 1 on an outlier");
  fleet_cmd->add_option("reports", fleet.reports, "Reports (or folders), one card each or several per card")
      ->required();
  fleet_cmd->add_option("--threshold", fleet.options.threshold_pct,
                        "Percent worse than the fleet below which no card is an outlier (default 5)")
      ->check(kFinitePositive);
  fleet_cmd->add_flag("--allow-device-mismatch", fleet.options.allow_device_mismatch,
                      "Hold cards of different GPU models together");
  fleet_cmd->add_option("--probes", fleet.probes, "Only these probes (comma-separated)")->delimiter(',');
  fleet_cmd->add_option("--format", fleet.format, "stdout: markdown or json")
      ->check(CLI::IsMember({"markdown", "json"}));
  fleet_cmd->add_option("--markdown", fleet.markdown_path, "Also write the markdown summary to FILE");

  // CLI11's own message for an unknown subcommand does not say what is valid.
  const auto commands = app.get_subcommands([](const CLI::App*) { return true; });
  const bool known = argc < 2 || std::any_of(commands.begin(), commands.end(),
                                             [&](const CLI::App* c) { return c->get_name() == argv[1]; });
  if (argc > 1 && argv[1][0] != '-' && !known) {
    err << fmt::format("tkprobe: unknown probe or command '{}' (valid: {})\n", argv[1], valid_commands(probes));
    return static_cast<int>(Exit::usage);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e, out, err);  // --help
    const std::string cmd = argc > 1 && argv[1][0] != '-' ? std::string(" ") + argv[1] : "";
    err << fmt::format("tkprobe{}: {} (see 'tkprobe{} --help')\n", cmd, e.what(), cmd);
    return static_cast<int>(Exit::usage);
  }

  try {
    CLI::App* chosen = app.get_subcommands().front();
    if (chosen->get_name() == "list") return print_list(out, probes);
    if (chosen == cmp) return run_compare(compare, probes, out);
    if (chosen == base_cmd) return run_baseline(baseline, out);
    if (chosen == fleet_cmd) return run_fleet(fleet, probes, out);
    common.seed_given = chosen->count("--seed") > 0;
    if (chosen == claims_cmd) return run_claims(common, claims_full, claims_from, args, out, err);
    common.timeout_given = chosen->count("--timeout") > 0;
    std::vector<Probe*> selected;
    bool suite = false;  // `all` without --probes: in_suite decides once the devices are known
    if (chosen == all) {
      const auto only = chosen_probes(suite_probes, probes);
      suite = only.empty();
      for (auto& p : probes)
        if (suite || only.count(p->name())) {
          p->use_suite_settings();
          selected.push_back(p.get());
        }
    } else {
      Probe* p = by_command.at(chosen);
      if (p->spans_devices() && chosen->count("--device")) {
        throw UsageError(fmt::format("{} measures between GPUs: choose them with --devices (default: all), not --device",
                                     p->name()));
      }
      if (p->spans_devices() && common.devices.empty()) common.devices = "all";
      selected.push_back(p);
    }
    if (!common.devices.empty()) return run_on_devices(selected, chosen == all, suite, common, args, out, err);
    return run_probes(selected, suite, common, args, out, err);
  } catch (const UsageError& e) {
    err << "tkprobe: " << e.what() << '\n';
    return static_cast<int>(Exit::usage);
  } catch (const NoDeviceError& e) {
    err << "tkprobe: " << e.what() << '\n';
    return static_cast<int>(Exit::no_device);
  } catch (const std::exception& e) {
    err << "tkprobe: " << e.what() << '\n';
    return static_cast<int>(Exit::runtime);
  }
}

}  // namespace tkprobe
