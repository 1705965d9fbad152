// `tkprobe fleet REPORT...`: the card unlike the others (src/fleet.hpp).
#include <CLI/CLI.hpp>

#include "src/commands/command.hpp"
#include "src/commands/options.hpp"
#include "src/errors.hpp"
#include "src/fleet.hpp"
#include "src/report_set.hpp"

namespace tkprobe {
namespace {

class FleetCommand final : public Command {
 public:
  std::string name() const override { return "fleet"; }
  std::string help() const override {
    return "Which GPU of many is not like the others: reports from several cards, outliers per row; exit 1 on an "
           "outlier";
  }
  std::string list_line() const override { return "find the card unlike the others: tkprobe fleet REPORT REPORT..."; }

  void add_options(CLI::App& cmd, CommonOptions&) override {
    cmd.add_option("reports", reports_, "Reports (or folders), one card each or several per card")->required();
    cmd.add_option("--threshold", options_.threshold_pct,
                   "Percent worse than the fleet below which no card is an outlier (default 5)")
        ->check(kFinitePositive);
    cmd.add_flag("--allow-device-mismatch", options_.allow_device_mismatch,
                 "Hold cards of different GPU models together");
    cmd.add_option("--probes", probes_, "Only these probes (comma-separated)")->delimiter(',');
    cmd.add_option("--format", format_, "stdout: markdown or json")->check(CLI::IsMember({"markdown", "json"}));
    cmd.add_option("--markdown", markdown_path_, "Also write the markdown summary to FILE");
  }

  // Every report is read before anything is written; the summary file is written whole or not at all.
  int run(const CLI::App&, Invocation& in) override {
    options_.probes = chosen_probes(probes_, in.probes);
    if (!markdown_path_.empty()) require_writable_target(markdown_path_, "--markdown");
    const Fleet f = fleet_of(read_each_report(), options_);
    const std::string markdown = fleet_markdown(f);
    in.out << (format_ == "json" ? fleet_json(f).dump(2) + "\n" : markdown);
    if (!markdown_path_.empty()) write_file_atomic(markdown_path_, markdown);
    return static_cast<int>(f.failed() ? Exit::check_failed : Exit::ok);
  }

 private:
  // Each file alone: fleet merges a card's reports itself, by its UUID.
  std::vector<ReportSet> read_each_report() const {
    std::vector<ReportSet> reports;
    for (const auto& path : reports_) {
      for (const auto& file : report_files(path)) reports.push_back(as_report_set(read_report(file), file.string()));
    }
    return reports;
  }

  std::vector<std::string> reports_;
  FleetOptions options_;
  std::vector<std::string> probes_;
  std::string format_ = "markdown";
  std::string markdown_path_;
};

}  // namespace

std::unique_ptr<Command> fleet_command() { return std::make_unique<FleetCommand>(); }

}  // namespace tkprobe
