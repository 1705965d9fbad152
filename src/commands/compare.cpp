// `tkprobe compare BASE NEW`: a report judged against a baseline (src/compare.hpp).
#include <CLI/CLI.hpp>

#include "src/commands/command.hpp"
#include "src/commands/options.hpp"
#include "src/compare.hpp"
#include "src/compare_output.hpp"
#include "src/errors.hpp"
#include "src/report_set.hpp"

namespace tkprobe {
namespace {

class CompareCommand final : public Command {
 public:
  std::string name() const override { return "compare"; }
  std::string help() const override {
    return "Judge a report against a baseline; exit 1 on a regression, a missing row or a failed check";
  }
  std::string list_line() const override { return "judge a report against a baseline: tkprobe compare BASE NEW"; }

  void add_options(CLI::App& cmd, CommonOptions&) override {
    cmd.add_option("base", base_, "Baseline: a report, or a folder of reports (results/h200)")->required();
    cmd.add_option("new", now_, "New report (or folder)")->required();
    cmd.add_option("--threshold", options_.threshold_pct, "Slowdown in percent that fails (default 5)")
        ->check(kFinitePositive);
    cmd.add_flag("--allow-device-mismatch", options_.allow_device_mismatch,
                 "Compare reports from different GPU models");
    cmd.add_option("--probes", probes_, "Compare only these probes (comma-separated)")->delimiter(',');
    cmd.add_option("--format", format_, "stdout: markdown or json")->check(CLI::IsMember({"markdown", "json"}));
    cmd.add_option("--junit", junit_path_, "Also write JUnit XML (one test case per judged row) to FILE");
    cmd.add_option("--markdown", markdown_path_, "Also write the markdown summary to FILE (a CI job summary)");
  }

  // Output files are checked before any report is read, and written whole or not at all.
  int run(const CLI::App&, Invocation& in) override {
    options_.probes = chosen_probes(probes_, in.probes);
    if (!junit_path_.empty()) require_writable_target(junit_path_, "--junit");
    if (!markdown_path_.empty()) require_writable_target(markdown_path_, "--markdown");
    const Comparison c = compare_reports(read_report_set(base_), read_report_set(now_), options_);
    const std::string markdown = to_markdown(c);
    in.out << (format_ == "json" ? to_json(c).dump(2) + "\n" : markdown);
    if (!junit_path_.empty()) write_file_atomic(junit_path_, to_junit(c));
    if (!markdown_path_.empty()) write_file_atomic(markdown_path_, markdown);
    return static_cast<int>(c.failed() ? Exit::check_failed : Exit::ok);
  }

 private:
  std::string base_, now_;
  CompareOptions options_;
  std::vector<std::string> probes_;
  std::string format_ = "markdown";
  std::string junit_path_, markdown_path_;
};

}  // namespace

std::unique_ptr<Command> compare_command() { return std::make_unique<CompareCommand>(); }

}  // namespace tkprobe
