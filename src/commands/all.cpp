// `tkprobe all`: the suite, or the probes --probes names.
#include <CLI/CLI.hpp>

#include "src/commands/command.hpp"
#include "src/commands/options.hpp"
#include "src/commands/probe_runner.hpp"

namespace tkprobe {
namespace {

class AllCommand final : public Command {
 public:
  std::string name() const override { return "all"; }
  std::string help() const override { return "Run every probe (the suite)"; }
  std::string list_line() const override { return "run every probe above (or --probes a,b)"; }
  HelpPlace help_place() const override { return HelpPlace::above_probes; }

  void add_options(CLI::App& cmd, CommonOptions& common) override {
    add_common_options(cmd, common);
    cmd.add_option("--probes", only_, "Run only these probes (comma-separated)")->delimiter(',');
  }

  // Every probe runs at its suite settings; without --probes, in_suite() decides once the devices are known.
  int run(const CLI::App& cmd, Invocation& in) override {
    const auto only = chosen_probes(only_, in.probes);
    ProbeRun run;
    run.from_all = true;
    run.suite = only.empty();
    for (auto& p : in.probes) {
      if (run.suite || only.count(p->name())) {
        p->use_suite_settings();
        run.probes.push_back(p.get());
      }
    }
    return run_probes(run, cmd, in);
  }

 private:
  std::vector<std::string> only_;  // --probes
};

}  // namespace

std::unique_ptr<Command> all_command() { return std::make_unique<AllCommand>(); }

}  // namespace tkprobe
