#include "src/commands/probe_runner.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>

#include "src/devices.hpp"
#include "src/errors.hpp"
#include "src/format.hpp"
#include "src/progress.hpp"
#include "src/report_devices.hpp"

namespace tkprobe {
namespace {

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

// A result that carries no figures: a probe that could not run, and why.
Result without_figures(const Probe& p, Status status, std::string reason) {
  Result r(p.name());
  r.status = status;
  r.reason = std::move(reason);
  return r;
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
// it runs on needs what its code needs (src/requirements.hpp).
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
    if (std::string why = why_not_runnable(p.needs(), *d); !why.empty()) return why;
  }
  return "";
}

// Every probe in turn: one that cannot run here gets a `skipped` row saying why, one that meets a
// CUDA error a `failed` row; each one that ran, its wall time. A probe asked for that cannot run makes
// the exit 3; the suite (`suite`: `tkprobe all` without --probes) runs what this GPU can, and exits 3
// only where that is nothing.
Outcome run_each(const std::vector<Probe*>& probes, ProbeContext& ctx, std::ostream& err, bool suite) {
  Outcome outcome;
  bool skipped_any = false, ran_any = false;
  for (Probe* p : probes) {
    if (const std::string why = why_not(*p, ctx); !why.empty()) {
      skipped_any = true;
      ctx.add(without_figures(*p, Status::skipped, why));
      continue;
    }
    ran_any = true;
    const auto start = std::chrono::steady_clock::now();
    try {
      p->run(ctx);
    } catch (const CudaError& e) {
      outcome.runtime_error = true;
      ctx.add(without_figures(*p, Status::failed, e.what()));
      err << "tkprobe: " << p->name() << ": " << e.what() << '\n';
    }
    ctx.report.seconds[p->name()] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  outcome.lacked_device = skipped_any && (!suite || !ran_any);
  return outcome;
}

int exit_code(const Outcome& outcome, const Json& report) {
  const auto& rows = report["results"];
  const bool any_failed = std::any_of(rows.begin(), rows.end(), [](const Json& r) { return r["status"] == "failed"; });
  if (outcome.runtime_error) return static_cast<int>(Exit::runtime);
  if (any_failed) return static_cast<int>(Exit::check_failed);
  return static_cast<int>(outcome.lacked_device ? Exit::no_device : Exit::ok);
}

// `tkprobe all` without --probes (`suite`) on `devices` devices: the probes in_suite.
void keep_suite(std::vector<Probe*>& probes, bool suite, std::size_t devices) {
  if (suite) std::erase_if(probes, [&](const Probe* p) { return !in_suite(*p, devices); });
}

// One device, in this process: usage errors first (before any device work), then the device, then
// every probe.
int run_on_one_device(std::vector<Probe*> probes, bool suite, CommonOptions& o, const std::vector<std::string>& args,
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
  const Outcome outcome = run_each(probes, context, err, suite);
  const Json j = to_json(report);
  emit(j, o, out);
  return exit_code(outcome, j);
}


std::string device_text(const DeviceInfo& d) { return fmt::format("{} ({}, {})", d.index, d.name, d.pci_bus_id); }

// One device's run, once it has ended: its messages passed on, every line marked with its device, and
// its report read. A run that exits 2 or 4, dies or writes no report makes this one a runtime error.
// One that exits 3 (a probe it could not run) makes this one exit 3, unless `suite` and it ran some
// (run_each says why).
void collect_device_run(const DeviceInfo& d, const std::string& report, const std::string& log, const ChildExit& e,
                        bool suite, DeviceRun& run, Outcome& outcome, std::ostream& err) {
  std::ifstream messages(log);
  for (std::string line; std::getline(messages, line);) err << fmt::format("[device {}] {}\n", d.index, line);
  const bool wrote = std::filesystem::exists(report);
  if (wrote) run.report = read_report(report);
  const auto ran = [](const Json& r) { return r["status"] != "skipped"; };
  const bool ran_some = wrote && std::ranges::any_of(run.report["results"], ran);
  outcome.lacked_device |= e.code == int(Exit::no_device) && !(suite && ran_some);
  if (!wrote || e.signaled || e.code == int(Exit::runtime) || e.code == int(Exit::usage)) {
    outcome.runtime_error = true;
    err << fmt::format("tkprobe: device {}'s run {} {}{}\n", d.index, e.signaled ? "was killed, exit" : "exited",
                       e.code, wrote ? "" : ", and wrote no report");
  }
}

// Each device's run of `probes`: this executable again, once per device, all at once
// (src/devices.hpp says why), each device's messages passed on after it ends.
std::vector<DeviceRun> run_each_device(const std::vector<Probe*>& probes, bool from_all, bool suite,
                                       const std::vector<DeviceInfo>& devices, const CommonOptions& o,
                                       const std::vector<std::string>& args, std::ostream& err, Outcome& outcome) {
  std::vector<DeviceRun> runs;
  for (const auto& d : devices) runs.push_back({to_json(d), nullptr});
  if (probes.empty()) return runs;
  const ScratchFolder scratch("tkprobe-devices");  // the device runs' reports and messages
  std::vector<std::string> names;
  for (const Probe* p : probes) names.push_back(p->name());
  std::vector<std::vector<std::string>> commands;
  std::vector<std::string> reports, logs;
  std::string which;
  for (const auto& d : devices) {
    reports.push_back((scratch.path / fmt::format("device{}.json", d.index)).string());
    logs.push_back((scratch.path / fmt::format("device{}.log", d.index)).string());
    commands.push_back(
        device_run_args(args, d.index, reports.back(), o.seed, from_all ? names : std::vector<std::string>{}));
    which += (which.empty() ? "" : ", ") + device_text(d);
  }
  err << fmt::format("tkprobe: running on {} device(s) side by side: {}\n", devices.size(), which);
  const std::vector<ChildExit> exits = run_side_by_side(self_executable(), commands, logs);
  for (std::size_t k = 0; k < devices.size(); ++k) {
    collect_device_run(devices[k], reports[k], logs[k], exits[k], suite, runs[k], outcome, err);
  }
  return runs;
}

// The probes that span devices, here, once every device's own run is done: a harness on each device.
Json run_across(const std::vector<Probe*>& probes, bool suite, const std::vector<DeviceInfo>& devices,
                const CommonOptions& o, const std::vector<std::string>& args, std::ostream& err, Outcome& outcome) {
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
  outcome.add(run_each(probes, context, err, suite));
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
  const auto runs = run_each_device(own, from_all, suite, devices, o, args, err, outcome);
  const Json spanning = across.empty() ? Json() : run_across(across, suite, devices, o, args, err, outcome);
  const Json j = merge_device_runs(std::move(tool), host_section(devices.front().driver), runs, spanning);
  emit(j, o, out);
  return exit_code(outcome, j);
}

}  // namespace

std::uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) | rd();
}

void emit(const Json& report, const CommonOptions& o, std::ostream& out) {
  print_report(out, report, o.json_path == "-" ? Format::json : o.format);
  if (!o.json_path.empty() && o.json_path != "-") write_file_atomic(o.json_path, report_text(report));
}

int run_probes(const ProbeRun& run, const CLI::App& cmd, Invocation& in) {
  in.common.seed_given = cmd.count("--seed") > 0;
  in.common.timeout_given = cmd.count("--timeout") > 0;
  if (!in.common.devices.empty()) {
    return run_on_devices(run.probes, run.from_all, run.suite, in.common, in.args, in.out, in.err);
  }
  return run_on_one_device(run.probes, run.suite, in.common, in.args, in.out, in.err);
}

int run_probe_command(Probe& p, const CLI::App& cmd, Invocation& in) {
  if (p.spans_devices() && cmd.count("--device")) {
    throw UsageError(
        fmt::format("{} measures between GPUs: choose them with --devices (default: all), not --device", p.name()));
  }
  if (p.spans_devices() && in.common.devices.empty()) in.common.devices = "all";
  return run_probes({{&p}}, cmd, in);
}

}  // namespace tkprobe
