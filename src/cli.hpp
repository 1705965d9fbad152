#pragma once
// The command line: `tkprobe <probe|command> [options]`, a subcommand for every registered probe
// and every command in src/commands/. Kept apart from main() so host tests drive it in-process
// with their own streams.
#include <ostream>

namespace tkprobe {

// Returns the process exit code (errors.hpp); writes results to `out`, messages to `err`.
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace tkprobe
