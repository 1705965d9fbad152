#pragma once
// What a probe is, and how it reaches the driver. A probe is a class with a name, a one-line
// summary, its own options and a run(); TKPROBE_REGISTER_PROBE adds it to `tkprobe list`,
// `tkprobe all` and the subcommands. Its kernels live in a .cu file beside it.
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "src/device.hpp"
#include "src/harness.hpp"
#include "src/report.hpp"

namespace CLI {
class App;
}

namespace tkprobe {

enum class Format { table, json, markdown, csv };

// Options every probe takes (the README's options and exit codes).
struct CommonOptions {
  int device = 0;
  std::string json_path;  // "" none, "-" stdout
  Format format = Format::table;
  bool quick = false;      // CI-sized: fewer configurations and samples
  std::uint64_t seed = 0;  // set from --seed, else drawn fresh and recorded
  bool seed_given = false;
  double min_time_s = 0.02;
  double max_noise_pct = 1.0;
  double timeout_s = 2.0;
  bool timeout_given = false;  // --timeout on the command line: --quick does not shorten it
  bool flush_l2 = false;
};

struct ProbeContext {
  const CommonOptions& options;
  const DeviceInfo& device;
  Harness& harness;
  std::mt19937_64& rng;
  Report& report;

  Result& add(Result result) { return report.results.emplace_back(std::move(result)); }
  void finding(const std::string& probe, std::string text) { report.findings.push_back({probe, std::move(text)}); }
};

class Probe {
 public:
  virtual ~Probe() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;  // one line, for `tkprobe list`
  virtual void add_options(CLI::App&) {}
  virtual void validate() const {}          // throws UsageError naming what is valid
  virtual void use_suite_settings() {}      // what `tkprobe all` runs, where it differs from the defaults
  virtual int min_cc() const { return 0; }     // e.g. 90: the probe needs Hopper
  virtual int max_cc() const { return 1000; }  // 90 for sm_90a code, which runs on 9.0 only
  virtual void run(ProbeContext& context) = 0;
};

using ProbeFactory = std::function<std::unique_ptr<Probe>()>;

// Every registered probe, made fresh and sorted by name.
std::vector<std::unique_ptr<Probe>> make_probes();

struct RegisterProbe {
  explicit RegisterProbe(ProbeFactory factory);
};

}  // namespace tkprobe

#define TKPROBE_REGISTER_PROBE(Type)                                \
  static const ::tkprobe::RegisterProbe tkprobe_registered_##Type { \
    [] { return std::make_unique<Type>(); }                         \
  }
