#include "src/cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/commands/command.hpp"
#include "src/commands/options.hpp"
#include "src/commands/probe_runner.hpp"
#include "src/errors.hpp"
#include "src/report.hpp"

namespace tkprobe {
namespace {

// Every probe and command name, for the usage error of an unknown one.
std::string valid_commands(const Invocation& in) {
  std::string names = probe_names(in.probes);
  for (const auto& c : in.commands) names += ", " + c->name();
  return names;
}

// Each subcommand and what it runs: a command, or a probe.
struct Subcommands {
  std::map<const CLI::App*, Command*> commands;
  std::map<const CLI::App*, Probe*> probes;
};

void add_commands(CLI::App& app, HelpPlace place, Invocation& in, Subcommands& subs) {
  for (const auto& c : in.commands) {
    if (c->help_place() != place) continue;
    CLI::App* cmd = app.add_subcommand(c->name(), c->help());
    c->add_options(*cmd, in.common);
    subs.commands[cmd] = c.get();
  }
}

void add_probes(CLI::App& app, Invocation& in, Subcommands& subs) {
  for (auto& p : in.probes) {
    CLI::App* cmd = app.add_subcommand(p->name(), p->summary());
    cmd->footer("Needs: " + needs_text(*p) + ". A GPU without it gets `skipped` rows saying why.");
    add_common_options(*cmd, in.common);
    p->add_options(*cmd);
    subs.probes[cmd] = p.get();
  }
}

// Every command and probe as a subcommand, in the order `tkprobe --help` shows them (HelpPlace).
Subcommands add_subcommands(CLI::App& app, Invocation& in) {
  Subcommands subs;
  add_commands(app, HelpPlace::first, in, subs);
  add_commands(app, HelpPlace::above_probes, in, subs);
  add_probes(app, in, subs);
  add_commands(app, HelpPlace::below_probes, in, subs);
  return subs;
}

// Whether the first argument is a word that names no probe or command. CLI11's own message for an
// unknown subcommand does not say what is valid.
bool unknown_subcommand(const CLI::App& app, int argc, const char* const* argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  const auto all = app.get_subcommands([](const CLI::App*) { return true; });
  return std::none_of(all.begin(), all.end(), [&](const CLI::App* c) { return c->get_name() == argv[1]; });
}

// Parses the command line; a usage error prints one line that points at the command's --help.
std::optional<int> parse(CLI::App& app, int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e, out, err);  // --help
    const std::string cmd = argc > 1 && argv[1][0] != '-' ? std::string(" ") + argv[1] : "";
    err << fmt::format("tkprobe{}: {} (see 'tkprobe{} --help')\n", cmd, e.what(), cmd);
    return static_cast<int>(Exit::usage);
  }
}

int run_chosen(const Subcommands& subs, const CLI::App& chosen, Invocation& in) {
  if (auto c = subs.commands.find(&chosen); c != subs.commands.end()) return c->second->run(chosen, in);
  return run_probe_command(*subs.probes.at(&chosen), chosen, in);
}

// Runs the chosen subcommand; an error it throws becomes its message and exit code.
int dispatch(const Subcommands& subs, const CLI::App& app, Invocation& in) {
  try {
    return run_chosen(subs, *app.get_subcommands().front(), in);
  } catch (const UsageError& e) {
    in.err << "tkprobe: " << e.what() << '\n';
    return static_cast<int>(Exit::usage);
  } catch (const NoDeviceError& e) {
    in.err << "tkprobe: " << e.what() << '\n';
    return static_cast<int>(Exit::no_device);
  } catch (const std::exception& e) {
    in.err << "tkprobe: " << e.what() << '\n';
    return static_cast<int>(Exit::runtime);
  }
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  const std::vector<std::string> args(argv, argv + argc);
  auto probes = make_probes();
  const auto commands = make_commands();
  CommonOptions common;
  Invocation in{args, probes, commands, common, out, err};

  CLI::App app{"tkprobe: how close code gets to a Hopper GPU's tensor-core peak, and why.", "tkprobe"};
  app.require_subcommand(1, 1);
  app.set_version_flag("--version", std::function<std::string()>(version_text));  // asks the driver only when given
  app.footer(
      "Exit codes: 0 ok, 1 a check or regression failed, 2 usage error, 3 no suitable device, "
      "4 CUDA/runtime error.\n");
  const Subcommands subs = add_subcommands(app, in);

  if (unknown_subcommand(app, argc, argv)) {
    err << fmt::format("tkprobe: unknown probe or command '{}' (valid: {})\n", argv[1], valid_commands(in));
    return static_cast<int>(Exit::usage);
  }
  if (const auto code = parse(app, argc, argv, out, err)) return *code;
  return dispatch(subs, app, in);
}

}  // namespace tkprobe
