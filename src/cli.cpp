#include "src/cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "src/compare.hpp"
#include "src/errors.hpp"
#include "src/format.hpp"
#include "src/probe.hpp"

namespace tkprobe {
namespace {

const std::map<std::string, Format> kFormats = {
    {"table", Format::table}, {"json", Format::json}, {"markdown", Format::markdown}, {"csv", Format::csv}};

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
    c.timeout_s = std::min(c.timeout_s, 0.5);
  }
  return c;
}

struct CompareArgs {
  std::string base, now;
  CompareOptions options;
  std::string format = "markdown";
};

void add_common_options(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--device", o.device, "CUDA device index")->check(CLI::NonNegativeNumber);
  cmd.add_option("--json", o.json_path, "Write the JSON report to FILE ('-' for stdout)");
  cmd.add_option_function<std::string>(
         "--format", [&o](const std::string& name) { o.format = kFormats.at(name); },
         "Output format: table, json, markdown or csv")
      ->check(CLI::IsMember(kFormats));
  cmd.add_flag("--quick", o.quick, "CI-sized run: fewer configurations and samples");
  cmd.add_option("--seed", o.seed, "Seed for random inputs (default: fresh each run, recorded in the report)");
  cmd.add_option("--min-time", o.min_time_s, "Least measured seconds per measurement")->check(CLI::PositiveNumber);
  cmd.add_option("--max-noise", o.max_noise_pct, "Stop sampling once the CV is under this percentage")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--timeout", o.timeout_s, "Seconds after which a measurement stops even if noisy")
      ->check(CLI::PositiveNumber);
  cmd.add_flag("--flush-l2", o.flush_l2, "Evict L2 before each sample");
}

std::string valid_commands(const std::vector<std::unique_ptr<Probe>>& probes) {
  std::string names;
  for (const auto& p : probes) names += p->name() + ", ";
  return names + "all, list, compare";
}

int print_list(std::ostream& out, const std::vector<std::unique_ptr<Probe>>& probes) {
  std::size_t width = 0;
  for (const auto& p : probes) width = std::max(width, p->name().size());
  for (const auto& p : probes) out << fmt::format("{:<{}}  {}\n", p->name(), width, p->summary());
  out << fmt::format("\n{:<{}}  {}\n{:<{}}  {}\n", "all", width, "run every probe above", "compare", width,
                     "compare two reports: tkprobe compare BASE.json NEW.json");
  return 0;
}

int run_compare(const CompareArgs& args, std::ostream& out) {
  const Json base = read_report(args.base);
  const Json now = read_report(args.now);
  const Comparison c = compare_reports(base, now, args.options);
  if (args.format == "json") {
    Json rows = Json::array();
    for (const auto& r : c.rows) {
      rows.push_back({{"probe", r.probe},
                      {"params", r.params},
                      {"metric", r.metric},
                      {"base", r.base},
                      {"new", r.now},
                      {"delta_pct", r.delta_pct},
                      {"noise_pct", r.noise_pct},
                      {"verdict", to_string(r.verdict)},
                      {"fails", r.fails}});
    }
    out << Json{{"threshold_pct", c.threshold_pct}, {"failed", c.failed()}, {"rows", rows}}.dump(2) << '\n';
  } else {
    out << to_markdown(c);
  }
  return static_cast<int>(c.failed() ? Exit::check_failed : Exit::ok);
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

// Usage errors first (before any device work), then the device, then every probe.
int run_probes(const std::vector<Probe*>& probes, CommonOptions& o, const std::vector<std::string>& args,
               std::ostream& out, std::ostream& err) {
  if (!o.json_path.empty() && o.json_path != "-") require_writable_target(o.json_path);
  for (const Probe* p : probes) p->validate();
  if (!o.seed_given) o.seed = fresh_seed();

  const DeviceInfo device = query_device(o.device);
  TK_CUDA(cudaSetDevice(device.index));
  Report report = new_report(args, o.seed, device);

  Progress progress;
  Harness harness(timing_config(o), device, progress);
  std::mt19937_64 rng(o.seed);
  ProbeContext context{o, device, harness, rng, report};
  bool lacked_device = false, runtime_error = false;
  for (Probe* p : probes) {
    if (device.cc() < p->min_cc() || device.cc() > p->max_cc()) {
      lacked_device = true;
      context.add(without_figures(*p, Status::skipped, unsupported_device(*p, device)));
      continue;
    }
    try {
      p->run(context);
    } catch (const CudaError& e) {
      runtime_error = true;
      context.add(without_figures(*p, Status::failed, e.what()));
      err << "tkprobe: " << p->name() << ": " << e.what() << '\n';
    }
  }

  const Json j = to_json(report);
  print_report(out, j, o.json_path == "-" ? Format::json : o.format);
  if (!o.json_path.empty() && o.json_path != "-") write_file_atomic(o.json_path, j.dump(2) + "\n");

  const bool any_failed = std::any_of(report.results.begin(), report.results.end(),
                                      [](const Result& r) { return r.status == Status::failed; });
  if (runtime_error) return static_cast<int>(Exit::runtime);
  if (any_failed) return static_cast<int>(Exit::check_failed);
  return static_cast<int>(lacked_device ? Exit::no_device : Exit::ok);
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  const std::vector<std::string> args(argv, argv + argc);
  auto probes = make_probes();
  CommonOptions common;
  CompareArgs compare;

  CLI::App app{"tkprobe: how close code gets to a Hopper GPU's tensor-core peak, and why.", "tkprobe"};
  app.require_subcommand(1, 1);
  app.footer(
      "Exit codes: 0 ok, 1 a check or regression failed, 2 usage error, 3 no suitable device, "
      "4 CUDA/runtime error.\n");
  app.add_subcommand("list", "List every probe with a one-line description");
  auto* all = app.add_subcommand("all", "Run every probe (the suite)");
  add_common_options(*all, common);
  std::map<CLI::App*, Probe*> by_command;
  for (auto& p : probes) {
    auto* cmd = app.add_subcommand(p->name(), p->summary());
    add_common_options(*cmd, common);
    p->add_options(*cmd);
    by_command[cmd] = p.get();
  }
  auto* cmp = app.add_subcommand("compare", "Compare two reports; exit 1 on a regression or a missing result");
  cmp->add_option("base", compare.base, "Baseline report")->required();
  cmp->add_option("new", compare.now, "New report")->required();
  cmp->add_option("--threshold", compare.options.threshold_pct, "Slowdown in percent that fails (default 5)")
      ->check(CLI::PositiveNumber);
  cmp->add_flag("--allow-device-mismatch", compare.options.allow_device_mismatch,
                "Compare reports from different GPU models");
  cmp->add_option("--format", compare.format, "markdown or json")->check(CLI::IsMember({"markdown", "json"}));

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
    if (chosen == cmp) return run_compare(compare, out);
    common.seed_given = chosen->count("--seed") > 0;
    std::vector<Probe*> selected;
    if (chosen == all) {
      for (auto& p : probes) selected.push_back(p.get());
    } else {
      selected.push_back(by_command.at(chosen));
    }
    return run_probes(selected, common, args, out, err);
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
