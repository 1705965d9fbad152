#include "src/commands/options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include "src/devices.hpp"
#include "src/errors.hpp"

namespace tkprobe {
namespace {

const std::map<std::string, Format> kFormats = {
    {"table", Format::table}, {"json", Format::json}, {"markdown", Format::markdown}, {"csv", Format::csv}};

// A whole number from 0 up to `max`; CLI11's own range check prints DBL_MAX as its upper bound, and
// an unsigned option would take "-1" as 2^64 - 1.
CLI::Validator whole_number_up_to(unsigned long long max) {
  return CLI::Validator(
      [max](std::string& text) {
        const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        const unsigned long long x = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
        if (digits && errno == 0 && x <= max) return std::string();
        return fmt::format("'{}' must be a whole number from 0 to {}", text, max);
      },
      "0..N");
}

// A --devices list: "all", or indices separated by commas, none twice (parse_device_list).
const CLI::Validator kDeviceList(
    [](std::string& text) {
      try {
        parse_device_list(text);
        return std::string();
      } catch (const UsageError& e) {
        return std::string(e.what());
      }
    },
    "all|N,N,...");

}  // namespace

// CLI11's PositiveNumber lets "nan" through, and a NaN threshold would pass every row.
const CLI::Validator kFinitePositive(
    [](std::string& text) {
      double x = 0;
      try {
        std::size_t used = 0;
        x = std::stod(text, &used);
        if (used != text.size()) return std::string("'" + text + "' is not a number");
      } catch (const std::exception&) {
        return std::string("'" + text + "' is not a number");
      }
      return std::isfinite(x) && x > 0 ? std::string() : "'" + text + "' must be a finite number above 0";
    },
    "FINITE>0");

CLI::Option* add_device_option(CLI::App& cmd, CommonOptions& o) {
  return cmd.add_option("--device", o.device, "CUDA device index")
      ->check(whole_number_up_to(std::numeric_limits<int>::max()));
}

void add_output_options(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--json", o.json_path, "Write the JSON report to FILE ('-' for stdout)");
  cmd.add_option_function<std::string>(
         "--format", [&o](const std::string& name) { o.format = kFormats.at(name); },
         "Output format: table, json, markdown or csv")
      ->check(CLI::IsMember(kFormats));
}

void add_seed_option(CLI::App& cmd, CommonOptions& o, const std::string& help) {
  cmd.add_option("--seed", o.seed, help)->check(whole_number_up_to(std::numeric_limits<std::uint64_t>::max()));
}

void add_common_options(CLI::App& cmd, CommonOptions& o) {
  auto* device = add_device_option(cmd, o);
  cmd.add_option("--devices", o.devices,
                 "Run on several GPUs side by side, one report: all, or indices such as 0,2,5 (each row names its "
                 "device)")
      ->check(kDeviceList)
      ->excludes(device);
  add_output_options(cmd, o);
  cmd.add_flag("--quick", o.quick,
               "CI-sized run: fewer configurations and samples, and 0.5 s per measurement unless --timeout says");
  add_seed_option(cmd, o, "Seed for random inputs (default: fresh each run, recorded in the report)");
  cmd.add_option("--min-time", o.min_time_s, "Least measured seconds per measurement")->check(kFinitePositive);
  cmd.add_option("--max-noise", o.max_noise_pct, "Stop sampling once the CV is under this percentage")
      ->check(kFinitePositive);
  cmd.add_option("--timeout", o.timeout_s, "Seconds after which a measurement stops even if noisy")
      ->check(kFinitePositive);
  cmd.add_flag("--flush-l2", o.flush_l2, "Evict L2 before each sample");
}

std::string probe_names(const std::vector<std::unique_ptr<Probe>>& probes) {
  std::string names;
  for (const auto& p : probes) names += (names.empty() ? "" : ", ") + p->name();
  return names;
}

std::set<std::string> chosen_probes(const std::vector<std::string>& names,
                                    const std::vector<std::unique_ptr<Probe>>& probes) {
  std::set<std::string> chosen;
  for (const auto& name : names) {
    const bool known = std::any_of(probes.begin(), probes.end(), [&](const auto& p) { return p->name() == name; });
    if (!known) throw UsageError(fmt::format("--probes: unknown probe '{}' (valid: {})", name, probe_names(probes)));
    chosen.insert(name);
  }
  return chosen;
}

}  // namespace tkprobe
