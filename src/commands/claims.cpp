// `tkprobe claims`: the account's claims (src/claims.hpp) judged from fresh probe runs, or from a
// report given with --from (a `tkprobe all` run, the committed baseline: no GPU needed).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <optional>
#include <sstream>

#include "src/claims.hpp"
#include "src/cli.hpp"
#include "src/commands/command.hpp"
#include "src/commands/options.hpp"
#include "src/commands/probe_runner.hpp"
#include "src/errors.hpp"
#include "src/report_devices.hpp"

namespace tkprobe {
namespace {

// One probe run for `claims`, in this process: its report (whatever its exit), or the exit code
// that stops `claims` (a usage or runtime error, or no device at all).
struct SubRun {
  Json report;
  int code;
};

SubRun run_for_claims(const ClaimRun& run, const CommonOptions& o, bool full, std::ostream& err) {
  std::vector<std::string> args{
      "tkprobe", run.probe, "--json", "-", "--device", std::to_string(o.device), "--seed", std::to_string(o.seed)};
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

ClaimsInput measure_claims(const CommonOptions& o, bool full, std::ostream& err) {
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

// The report --from names: one GPU's (the claims are judged for one), and the probes it ran.
ClaimsInput read_claims_report(const std::string& from) {
  ClaimsInput in;
  in.report = read_report(from);
  if (has_devices(in.report)) {
    throw UsageError(
        fmt::format("--from {}: a report of several devices (--devices); the claims are judged for one "
                    "GPU: give a report made with --device N",
                    from));
  }
  in.probes = in.report["tool"].value("probes", Json::array());
  return in;
}

// "N of M claims hold on this GPU, ...": the verdicts counted.
std::string verdict_count(const std::vector<Result>& judged) {
  int holds = 0, differs = 0, unmeasured = 0;
  for (const Result& r : judged) {
    if (r.status != Status::ok) {
      ++unmeasured;
    } else {
      (r.metrics["verdict"] == "holds" ? holds : differs)++;
    }
  }
  return fmt::format("{} of {} claims hold on this GPU, {} differ, {} not measured", holds, judged.size(), differs,
                     unmeasured);
}

class ClaimsCommand final : public Command {
 public:
  std::string name() const override { return "claims"; }
  std::string help() const override {
    return "The account's claims about the H100, each beside what this GPU measures, with a verdict (quick runs; "
           "--full for the real thing)";
  }

  void add_options(CLI::App& cmd, CommonOptions& common) override {
    auto* full = cmd.add_flag("--full", full_, "Run the probes at their full settings (minutes, not seconds)");
    cmd.add_option("--from", from_,
                   "Judge the claims from this report (a `tkprobe all` run, results/h200/suite.json) instead of "
                   "running probes: no GPU needed")
        ->excludes(full);
    add_device_option(cmd, common);
    add_output_options(cmd, common);
    add_seed_option(cmd, common, "Seed for every probe's random inputs (default: fresh, recorded)");
  }

  int run(const CLI::App& cmd, Invocation& in) override {
    CommonOptions& o = in.common;
    o.seed_given = cmd.count("--seed") > 0;
    if (!o.json_path.empty() && o.json_path != "-") require_writable_target(o.json_path);
    if (!o.seed_given) o.seed = fresh_seed();
    Report report;
    report.tool = tool_section(in.args);
    report.tool["seed"] = o.seed;
    ClaimsInput claims;
    if (from_.empty()) {
      claims = measure_claims(o, full_, in.err);
      if (claims.code) return *claims.code;
    } else {
      claims = read_claims_report(from_);
      report.tool["judged_from"] = from_;
    }
    report.tool["probes"] = claims.probes;
    report.device = claims.report["device"];
    report.host = claims.report["host"];
    report.results = judge_claims(claims.report);
    report.findings.push_back({"claims", verdict_count(report.results)});
    emit(to_json(report), o, in.out);
    return static_cast<int>(claims.lacked_device ? Exit::no_device : Exit::ok);
  }

 private:
  bool full_ = false;
  std::string from_;
};

}  // namespace

std::unique_ptr<Command> claims_command() { return std::make_unique<ClaimsCommand>(); }

}  // namespace tkprobe
