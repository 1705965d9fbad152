// `tkprobe list`: every probe with the GPU it needs and its summary, then the commands that take
// reports or run many probes.
#include <fmt/format.h>

#include <algorithm>

#include "src/commands/command.hpp"
#include "src/errors.hpp"

namespace tkprobe {
namespace {

// The GPU a probe needs, in a word: "sm_80+" or "sm_90a"; a `*` where some of its rows need more
// (`tkprobe <probe> --help` says which).
std::string short_needs(const Probe& p) {
  const Requirements r = p.needs();
  return (r.sm90a.empty() ? sm_name(r.min_cc) + "+" : sm_name(kSm90aCc, true)) + (p.row_needs().empty() ? "" : "*");
}

class ListCommand final : public Command {
 public:
  std::string name() const override { return "list"; }
  std::string help() const override { return "List every probe with a one-line description"; }
  HelpPlace help_place() const override { return HelpPlace::first; }

  int run(const CLI::App&, Invocation& in) override {
    std::size_t width = 0, needs_width = 0;
    for (const auto& p : in.probes) {
      width = std::max(width, p->name().size());
      needs_width = std::max(needs_width, short_needs(*p).size());
    }
    for (const auto& p : in.probes) {
      in.out << fmt::format("{:<{}}  {:<{}}  {}\n", p->name(), width, short_needs(*p), needs_width, p->summary());
    }
    in.out << "(* some of its rows need more: `tkprobe <probe> --help` says which)\n";
    in.out << '\n';
    for (const auto& c : in.commands) {
      if (!c->list_line().empty()) in.out << fmt::format("{:<{}}  {}\n", c->name(), width, c->list_line());
    }
    return static_cast<int>(Exit::ok);
  }
};

}  // namespace

std::unique_ptr<Command> list_command() { return std::make_unique<ListCommand>(); }

}  // namespace tkprobe
