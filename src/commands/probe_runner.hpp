#pragma once
// Running probes, for `tkprobe <probe>` and `tkprobe all`: on one device in this process, or on
// several side by side (--devices) into one report. Usage errors come before any device work.
#include <cstdint>
#include <ostream>
#include <vector>

#include "src/commands/command.hpp"
#include "src/json.hpp"

namespace tkprobe {

// The probes one command runs. `from_all`: the command is `tkprobe all`; `suite`: `all` without
// --probes, whose probes in_suite() picks once the devices are known.
struct ProbeRun {
  std::vector<Probe*> probes;
  bool from_all = false;
  bool suite = false;
};

// Runs `run` with the options parsed into `in.common` from `cmd`; returns the exit code (errors.hpp).
int run_probes(const ProbeRun& run, const CLI::App& cmd, Invocation& in);

// `tkprobe <probe>`: a probe that spans devices takes --devices (default: all), never --device.
int run_probe_command(Probe& p, const CLI::App& cmd, Invocation& in);

// A seed for a run that was given none (recorded in its report).
std::uint64_t fresh_seed();

// Prints `report` in the chosen format (JSON with --json -) and writes it to --json's file.
void emit(const Json& report, const CommonOptions& o, std::ostream& out);

}  // namespace tkprobe
