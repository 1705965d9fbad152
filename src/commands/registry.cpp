#include "src/commands/command.hpp"

namespace tkprobe {

// Each command is named here rather than registering itself as the probes do: tkprobe_core is a
// static library, and the linker keeps only the objects something references, so a command file
// that registered itself would drop out of the binary unnoticed. A call here references it.
std::vector<std::unique_ptr<Command>> make_commands() {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(all_command());
  commands.push_back(claims_command());
  commands.push_back(list_command());
  commands.push_back(compare_command());
  commands.push_back(baseline_command());
  commands.push_back(fleet_command());
  commands.push_back(roofline_command());
  return commands;
}

}  // namespace tkprobe
