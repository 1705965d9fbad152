// `tkprobe list`: every probe with the GPU it needs and its summary, then the commands that take
// reports or run many probes.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
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

// The support matrix, in markdown: a GPU family a column, and a row for each set of probes that
// run alike, in the registry's order of their first. A cell is ✓ (machine code), ✓ PTX (the driver
// compiles it) or ✗ (skipped); [n] marks a kind of rows that cannot run there, named below.
void print_matrix(const std::vector<std::unique_ptr<Probe>>& probes, std::ostream& out) {
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;  // probe names, cells
  std::vector<std::string> notes;
  for (const auto& p : probes) {
    std::vector<std::string> cells;
    for (const GpuFamily& f : kMatrixFamilies) {
      const ImageUse use = image_use(p->needs(), f.cc);
      std::string cell = use == ImageUse::none ? "✗" : use == ImageUse::ptx ? "✓ PTX" : "✓";
      for (const RowNeeds& kind : p->row_needs()) {
        if (use == ImageUse::none || image_use(kind.needs, f.cc) != ImageUse::none) continue;
        const std::string note =
            fmt::format("{}'s {} skipped: they need {}", p->name(), kind.rows, describe(kind.needs));
        const auto at = std::ranges::find(notes, note);
        cell += fmt::format(" [{}]", at - notes.begin() + 1);
        if (at == notes.end()) notes.push_back(note);
      }
      cells.push_back(cell);
    }
    const auto same = std::ranges::find(rows, cells, &decltype(rows)::value_type::second);
    if (same == rows.end())
      rows.emplace_back(p->name(), std::move(cells));
    else
      same->first += ", " + p->name();
  }
  out << "| probes |";
  for (const GpuFamily& f : kMatrixFamilies) out << fmt::format(" {} ({}) |", sm_name(f.cc), f.cards);
  out << "\n|---|";
  for (std::size_t i = 0; i < std::size(kMatrixFamilies); ++i) out << "---|";
  out << "\n";
  for (const auto& [names, cells] : rows) {
    out << "| " << names << " |";
    for (const std::string& c : cells) out << " " << c << " |";
    out << "\n";
  }
  out << "\n";
  for (std::size_t n = 0; n < notes.size(); ++n) out << fmt::format("[{}] {}. ", n + 1, notes[n]);
  out << fmt::format("This binary's kernel images: {}.\n", image_list(this_build()));
}

class ListCommand final : public Command {
 public:
  std::string name() const override { return "list"; }
  std::string help() const override { return "List every probe with a one-line description"; }
  HelpPlace help_place() const override { return HelpPlace::first; }
  void add_options(CLI::App& cmd, CommonOptions&) override {
    cmd.add_flag("--matrix", matrix_, "Print the support matrix instead: each probe on each GPU family (markdown)");
  }

  int run(const CLI::App&, Invocation& in) override {
    if (matrix_) {
      print_matrix(in.probes, in.out);
      return static_cast<int>(Exit::ok);
    }
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

 private:
  bool matrix_ = false;
};

}  // namespace

std::unique_ptr<Command> list_command() { return std::make_unique<ListCommand>(); }

}  // namespace tkprobe
