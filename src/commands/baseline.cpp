// `tkprobe baseline --out FILE RUN...`: a baseline from several runs (src/baseline.hpp).
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "src/baseline.hpp"
#include "src/commands/command.hpp"
#include "src/compare.hpp"
#include "src/errors.hpp"
#include "src/report_set.hpp"

namespace tkprobe {
namespace {

// Names the rows that drifted further over the runs than compare's band reaches at its default
// threshold: a run at the far end of their drift fails with the code unchanged.
void warn_unsteady(const Json& baseline, std::ostream& out) {
  const double threshold = CompareOptions{}.threshold_pct;
  const auto unsteady = unsteady_rows(baseline, threshold);
  if (unsteady.empty()) return;
  out << fmt::format(
      "warning: {} row(s) drifted more than {}% over these runs; compare holds them to {}% at the "
      "{}% threshold, so a run at the far end of their drift fails with the code unchanged:\n",
      unsteady.size(), max_drift_band_pct(threshold), max_drift_band_pct(threshold), threshold);
  for (const Json* r : unsteady) {
    const std::string metric = (*r)["primary"];
    out << fmt::format("  {} {}: {} drifted {:.1f}%\n", (*r)["probe"].get<std::string>(), params_text((*r)["params"]),
                       metric, (*r)["metrics"][metric]["drift_pct"].get<double>());
  }
}

class BaselineCommand final : public Command {
 public:
  std::string name() const override { return "baseline"; }
  std::string help() const override {
    return "Make a baseline from several runs of the same suite, recording how far they drift";
  }
  std::string list_line() const override {
    return "make a baseline from several runs: tkprobe baseline --out FILE RUN RUN...";
  }

  void add_options(CLI::App& cmd, CommonOptions&) override {
    cmd.add_option("--out", out_, "The baseline file to write")->required();
    cmd.add_option("runs", runs_, "Two or more reports (or folders) of the same suite")->required();
  }

  int run(const CLI::App&, Invocation& in) override {
    require_writable_target(out_, "--out");
    std::vector<ReportSet> runs;
    for (const auto& path : runs_) runs.push_back(read_report_set(path));
    const Json baseline = make_baseline(runs);
    write_file_atomic(out_, report_text(baseline));
    const Json& kept = baseline["tool"]["baseline"]["kept"];
    in.out << fmt::format("{}: {} rows from {} runs (kept run {}, {})\n", out_, baseline["results"].size(), runs.size(),
                          kept.get<int>() + 1, runs[kept.get<std::size_t>()].source);
    warn_unsteady(baseline, in.out);
    return static_cast<int>(Exit::ok);
  }

 private:
  std::string out_;
  std::vector<std::string> runs_;
};

}  // namespace

std::unique_ptr<Command> baseline_command() { return std::make_unique<BaselineCommand>(); }

}  // namespace tkprobe
