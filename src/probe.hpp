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
#include "src/requirements.hpp"

namespace CLI {
class App;
}

namespace tkprobe {

enum class Format { table, json, markdown, csv };

// Options every probe takes (the README's options and exit codes).
struct CommonOptions {
  int device = 0;
  std::string devices;    // --devices: "" (one device, --device), "all" or indices "0,2,5"
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

// A device a probe that spans devices works on, and the harness that times work issued there (its
// stream and events live on that device; NVML is read from it).
struct DeviceSlot {
  const DeviceInfo& info;
  Harness& harness;
};

struct ProbeContext {
  const CommonOptions& options;
  const DeviceInfo& device;
  Harness& harness;
  std::mt19937_64& rng;
  Report& report;
  std::vector<DeviceSlot> across = {};  // a probe that spans devices: every device --devices selected

  Result& add(Result result) { return report.results.emplace_back(std::move(result)); }
  void finding(const std::string& probe, std::string text) { report.findings.push_back({probe, std::move(text)}); }
};

// A kind of row that needs more than the rest of its probe, e.g. bandwidth's TMA copy.
struct RowNeeds {
  std::string rows;  // which rows, as `tkprobe list` and --help name them
  Requirements needs;
};

class Probe {
 public:
  virtual ~Probe() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;  // one line, for `tkprobe list`
  virtual void add_options(CLI::App&) {}
  virtual void validate() const {}      // throws UsageError naming what is valid
  virtual void use_suite_settings() {}  // what `tkprobe all` runs, where it differs from the defaults
  // What its code needs of the GPU (src/requirements.hpp); rows of other kinds check their own.
  virtual Requirements needs() const { return {}; }
  // Kinds of its rows that need more than the probe: each skipped, with the reason, where it cannot run.
  virtual std::vector<RowNeeds> row_needs() const { return {}; }
  // Whether the probe measures between devices (p2p): it then runs once, over every device --devices
  // selects (two or more: with fewer its row is `skipped`), in this process after the runs of each
  // device, and `tkprobe all` includes it only where --devices selects two or more, so that a run of
  // one device (every run without --devices) holds exactly the rows it held before such probes existed.
  virtual bool spans_devices() const { return false; }
  virtual void run(ProbeContext& context) = 0;
};

// What `p` and each kind of its rows need, for list and --help: "sm_80 or newer; TMA copy rows: sm_90a (TMA)".
std::string needs_text(const Probe& p);

// Whether `tkprobe all` without --probes runs `p` on a run of `devices` devices: every probe, less
// those that span devices where fewer than two are selected.

inline bool in_suite(const Probe& p, std::size_t devices) { return !p.spans_devices() || devices >= 2; }

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
