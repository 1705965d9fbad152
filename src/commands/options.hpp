#pragma once
// Options several commands share, with checks that name what is valid.
#include <CLI/CLI.hpp>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/probe.hpp"

namespace tkprobe {

// A number that can bound a measurement or a gate: finite and above zero.
extern const CLI::Validator kFinitePositive;

// --device N.
CLI::Option* add_device_option(CLI::App& cmd, CommonOptions& o);
// --json FILE and --format NAME.
void add_output_options(CLI::App& cmd, CommonOptions& o);
// --seed N, described by `help`.
void add_seed_option(CLI::App& cmd, CommonOptions& o, const std::string& help);
// The options every probe and `tkprobe all` take (DESIGN.md's CLI conventions).
void add_common_options(CLI::App& cmd, CommonOptions& o);

// "attention, bandwidth, ...": every probe's name, for messages that list the valid ones.
std::string probe_names(const std::vector<std::unique_ptr<Probe>>& probes);

// The probes --probes names; an unknown name is a usage error that lists the valid ones.
std::set<std::string> chosen_probes(const std::vector<std::string>& names,
                                    const std::vector<std::unique_ptr<Probe>>& probes);

}  // namespace tkprobe
