#pragma once
// The commands of `tkprobe` besides the probes (all, claims, list, compare, baseline, fleet, roofline). A command
// is a class deriving Command in src/commands/<name>.cpp with a factory declared below, one line in
// make_commands() (src/commands/registry.cpp) and its file in tkprobe_core's sources;
// tests/host/test_commands.cpp fails where a command file is missing from make_commands().
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "src/probe.hpp"

namespace tkprobe {

class Command;

// What a command reads besides its own options.
struct Invocation {
  const std::vector<std::string>& args;  // the whole command line, recorded in reports
  std::vector<std::unique_ptr<Probe>>& probes;
  const std::vector<std::unique_ptr<Command>>& commands;
  CommonOptions& common;
  std::ostream& out;  // results
  std::ostream& err;  // progress, warnings, errors
};

// Where `tkprobe --help` shows a command: `first` before all else, then `above_probes`, the probes,
// `below_probes`; in make_commands()' order within each.
enum class HelpPlace { first, above_probes, below_probes };

class Command {
 public:
  virtual ~Command() = default;
  virtual std::string name() const = 0;
  virtual std::string help() const = 0;                 // one line, for `tkprobe --help`
  virtual std::string list_line() const { return ""; }  // its line below the probes in `tkprobe list`; "" none
  virtual HelpPlace help_place() const { return HelpPlace::below_probes; }
  // Binds the command's options to its own members, and to `common` for those every probe shares.
  virtual void add_options(CLI::App& /*cmd*/, CommonOptions& /*common*/) {}
  // Runs once `cmd` (the command's own subcommand) is parsed; returns the exit code (errors.hpp).
  virtual int run(const CLI::App& cmd, Invocation& in) = 0;
};

// Each defined in src/commands/<name>.cpp.
std::unique_ptr<Command> all_command();
std::unique_ptr<Command> claims_command();
std::unique_ptr<Command> list_command();
std::unique_ptr<Command> compare_command();
std::unique_ptr<Command> baseline_command();
std::unique_ptr<Command> fleet_command();
std::unique_ptr<Command> roofline_command();

// Every command, made fresh, in the order the usage error and `tkprobe list` name them.
std::vector<std::unique_ptr<Command>> make_commands();

}  // namespace tkprobe
