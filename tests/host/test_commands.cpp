// The commands' registry (src/commands/registry.cpp): every command file is in it, and every command
// in it is reachable from the command line beside the probes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "src/commands/command.hpp"
#include "tests/fixtures.hpp"

using fixtures::run;

namespace {

bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::set<std::string> command_names() {
  std::set<std::string> names;
  for (const auto& c : tkprobe::make_commands()) names.insert(c->name());
  return names;
}

}  // namespace

// A command lives in src/commands/<name>.cpp; a file that defines one make_commands() leaves out
// would build and never run.
TEST(Commands, EveryCommandFileIsRegistered) {
  const auto names = command_names();
  const std::filesystem::path folder = std::filesystem::path(TKPROBE_SOURCE_DIR) / "src" / "commands";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    if (!mentions(text, "final : public Command")) continue;
    ++files;
    EXPECT_TRUE(names.count(entry.path().stem().string())) << entry.path() << " is not in make_commands()";
  }
  EXPECT_EQ(files, static_cast<int>(names.size())) << "one file per command";
}

TEST(Commands, NamesAreUniqueAndNoProbeTakesOne) {
  const auto names = command_names();
  EXPECT_EQ(names.size(), tkprobe::make_commands().size());
  for (const auto& p : tkprobe::make_probes()) EXPECT_FALSE(names.count(p->name())) << p->name();
}

TEST(Commands, EachIsASubcommandWithItsHelp) {
  const auto help = run({"--help"});
  const auto unknown = run({"no-such-command"});
  for (const auto& c : tkprobe::make_commands()) {
    EXPECT_FALSE(c->help().empty()) << c->name();
    EXPECT_TRUE(mentions(help.out, c->name())) << c->name();
    EXPECT_TRUE(mentions(unknown.err, ", " + c->name())) << "the usage error names " << c->name();
    const auto own = run({c->name(), "--help"});
    EXPECT_EQ(own.code, 0) << c->name() << ": " << own.err;
    EXPECT_TRUE(mentions(own.out, c->help())) << c->name();
  }
}
