// `tkprobe roofline`: a program's kernels, profiled by ncu (or read from an ncu report), each held
// against the ceilings a tkprobe report measured on the same GPU model (src/roofline.hpp).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include "src/cli.hpp"
#include "src/commands/command.hpp"
#include "src/commands/options.hpp"
#include "src/commands/probe_runner.hpp"
#include "src/devices.hpp"
#include "src/errors.hpp"
#include "src/roofline.hpp"

namespace tkprobe {
namespace {

namespace fs = std::filesystem;
namespace rl = roofline;

// The runs whose rows are the ceilings, for --measure-ceilings: the probes' quick runs, HBM over
// bandwidth's full 1 GiB (its quick 256 MiB read 2.89 TB/s on an H100 where a 1 GiB read ran at
// 3.17 under ncu: short launches lose their ramp).
const std::vector<std::vector<std::string>> kCeilingRuns{
    {"bandwidth", "--quick", "--size", "1024"},
    {"all", "--quick", "--probes", "l2,tensor-cores,overlap"}};
// ncu's message when the driver withholds the GPU's counters from this user.
constexpr const char* kNoPermission = "ERR_NVGPUCTRPERM";

struct ChildRun {
  int code = 0;
  std::string err;  // what it wrote to stderr (its log file)
};

std::string read_text(const fs::path& path, const std::string& option) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("{} {}: cannot read it (no such file, or no permission)", option, path.string()));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `argv` (argv[0] found on PATH), stdout to `out_path`; its exit and what it wrote to stderr.
ChildRun run_child(const std::vector<std::string>& argv, const fs::path& out_path, const fs::path& err_path) {
  const ChildExit exit = wait_for(start_child(argv.front(), argv, out_path.string(), err_path.string()));
  return {exit.code, read_text(err_path, "the log of")};
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  }
  return false;
}


// ncu's error, cut to its last lines (its log can run long).
std::string tail(const std::string& text, std::size_t lines = 8) {
  std::size_t at = text.size();
  for (std::size_t n = 0; n <= lines && at != std::string::npos && at > 0; ++n) at = text.rfind('\n', at - 1);
  return at == std::string::npos ? text : text.substr(at + 1);
}

class RooflineCommand final : public Command {
 public:
  std::string name() const override { return "roofline"; }
  std::string help() const override {
    return "A program's kernels (profiled by ncu) against the ceilings this GPU was measured to have";
  }

  void add_options(CLI::App& cmd, CommonOptions& common) override {
    cmd.add_option("program", program_, "The program to profile, after --: tkprobe roofline -- python3 model.py");
    cmd.add_option("--import", import_,
                   "Read an ncu report instead: REPORT.ncu-rep (read through ncu) or the CSV of `ncu --csv --page raw "
                   "--print-units base`");
    auto* export_option = cmd.add_option("--export", export_,
                                         "Keep ncu's report of the profile as FILE.ncu-rep, to read again with --import");
    cmd.add_option("--kernel", kernel_, "Only kernels whose name matches this regular expression (ncu's -k regex:)");
    cmd.add_option("--launch-skip", skip_, "Skip this many matching launches first (ncu's --launch-skip)")
        ->check(CLI::NonNegativeNumber);
    cmd.add_option("--launch-count", count_, "Profile at most this many matching launches (ncu's --launch-count)")
        ->check(CLI::PositiveNumber);
    cmd.add_flag("--profiler-range", range_,
                 "Profile only the launches between the program's cudaProfilerStart and cudaProfilerStop "
                 "(torch.cuda.profiler.start/stop; ncu's --profile-from-start off)")
        ->excludes(cmd.get_option("--import"));
    export_option->excludes(cmd.get_option("--import"));
    auto* ceilings = cmd.add_option("--ceilings", ceilings_,
                                    "A tkprobe report of this GPU model whose rows are the ceilings (default: the "
                                    "suite baseline for the GPU under results/)");
    cmd.add_flag("--measure-ceilings", measure_, "Measure the ceilings now: the bandwidth, l2, tensor-cores and "
                                                 "overlap probes, quick")
        ->excludes(ceilings);
    add_device_option(cmd, common);
    add_output_options(cmd, common);
  }

  int run(const CLI::App&, Invocation& in) override {
    CommonOptions& o = in.common;
    if (program_.empty() == import_.empty()) {
      throw UsageError("give a program to profile (tkprobe roofline -- COMMAND ARGS) or --import REPORT, one of them");
    }
    if (!o.json_path.empty() && o.json_path != "-") require_writable_target(o.json_path);
    if (!export_.empty()) {
      if (fs::path(export_).extension() != ".ncu-rep") {
        throw UsageError(fmt::format("--export {}: name the file FILE.ncu-rep, as ncu does", export_));
      }
      require_writable_target(export_, "--export");
    }
    const std::optional<std::regex> pattern = kernel_regex();
    std::vector<rl::Kernel> kernels = import_.empty() ? profile(in.err) : imported();
    if (import_.size() && (pattern || skip_ || count_)) kernels = chosen(kernels, pattern);
    if (kernels.empty()) throw UsageError("no kernel was profiled: check --kernel, --launch-skip and the program");
    const rl::Ceilings ceilings = load_ceilings(o, in, kernels.front().gpu);
    for (const rl::Kernel& k : kernels) {
      if (!k.gpu.empty() && k.gpu != ceilings.gpu) {
        throw UsageError(fmt::format("the kernels ran on {}, the ceilings ({}) were measured on {}: give --ceilings a "
                                     "report of {}, or --measure-ceilings", k.gpu, ceilings.source, ceilings.gpu, k.gpu));
      }
    }

    Report report;
    report.tool = tool_section(in.args);
    report.tool["ceilings"] = ceilings.source;
    report.tool["seed"] = ceilings.seed;
    report.host = ceilings.host;
    report.device = ceilings.device;
    for (const rl::Kernel& k : kernels) {
      const rl::Work w = rl::work_of(k);
      const std::vector<rl::Bound> b = rl::bounds(w, ceilings);
      report.results.push_back(rl::row_of(k, w, b, ceilings));
      if (!b.empty()) report.findings.push_back({"roofline", finding(k, b)});
    }
    if (!kernels.front().lacking.empty()) {
      report.findings.push_back({"roofline", fmt::format("the profile lacks {} (ncu has no such metric for this "
                                                         "GPU): that work is counted as none",
                                                         fmt::join(kernels.front().lacking, ", "))});
    }
    emit(to_json(report), o, in.out);
    return int(Exit::ok);
  }

 private:
  std::optional<std::regex> kernel_regex() const {
    if (kernel_.empty()) return std::nullopt;
    try {
      return std::regex(kernel_, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw UsageError(fmt::format("--kernel '{}': not a regular expression ({})", kernel_, e.what()));
    }
  }

  // The launches --kernel, --launch-skip and --launch-count pick from an imported report.
  std::vector<rl::Kernel> chosen(const std::vector<rl::Kernel>& all, const std::optional<std::regex>& pattern) const {
    std::vector<rl::Kernel> out;
    int matched = 0;
    for (const rl::Kernel& k : all) {
      if (pattern && !std::regex_search(k.name, *pattern)) continue;
      if (matched++ < skip_) continue;
      if (count_ && int(out.size()) >= count_) break;
      out.push_back(k);
    }
    return out;
  }

  void require_ncu() const {
    if (!on_path("ncu")) {
      throw NoDeviceError("ncu (Nsight Compute) is not on PATH: the roofline needs it to profile, and to read a "
                          ".ncu-rep; give --import a CSV of `ncu --csv --page raw --print-units base` instead");
    }
  }

  // The CSV of an .ncu-rep, by ncu.
  std::string export_csv(const fs::path& rep, const ScratchFolder& dir) const {
    const ChildRun r = run_child({"ncu", "--import", rep.string(), "--csv", "--page", "raw", "--print-units", "base"},
                                 dir.path / "raw.csv", dir.path / "import.err");
    if (r.code != 0) throw UsageError(fmt::format("ncu cannot read {}: {}", rep.string(), tail(r.err)));
    return read_text(dir.path / "raw.csv", "ncu's export of");
  }

  std::vector<rl::Kernel> imported() const {
    if (fs::path(import_).extension() != ".ncu-rep") return rl::parse_ncu_csv(read_text(import_, "--import"), import_);
    require_ncu();
    if (!fs::exists(import_)) throw UsageError(fmt::format("--import {}: no such file", import_));
    const ScratchFolder dir("tkprobe-roofline");
    return rl::parse_ncu_csv(export_csv(import_, dir), import_);
  }

  std::vector<rl::Kernel> profile(std::ostream& err) const {
    require_ncu();
    const ScratchFolder dir("tkprobe-roofline");
    std::vector<std::string> argv{"ncu", "--clock-control", "none", "--metrics", rl::ncu_metric_list(),
                                  "--export", (dir.path / "profile").string(), "--force-overwrite"};
    if (!kernel_.empty()) argv.insert(argv.end(), {"-k", "regex:" + kernel_});
    if (skip_) argv.insert(argv.end(), {"--launch-skip", std::to_string(skip_)});
    if (count_) argv.insert(argv.end(), {"--launch-count", std::to_string(count_)});
    if (range_) argv.insert(argv.end(), {"--profile-from-start", "off"});
    argv.insert(argv.end(), program_.begin(), program_.end());
    err << fmt::format("roofline: profiling {} with ncu...\n", program_.front());
    const ChildRun r = run_child(argv, dir.path / "program.out", dir.path / "ncu.err");
    if (r.err.find(kNoPermission) != std::string::npos) {
      throw NoDeviceError("ncu may not read this GPU's counters (ERR_NVGPUCTRPERM): run as root, or load the driver "
                          "with NVreg_RestrictProfilingToAdminUsers=0");
    }
    if (r.code != 0) throw UsageError(fmt::format("ncu or the program exited {}: {}", r.code, tail(r.err)));
    const fs::path rep = dir.path / "profile.ncu-rep";
    if (!export_.empty()) fs::copy_file(rep, export_, fs::copy_options::overwrite_existing);
    return rl::parse_ncu_csv(export_csv(rep, dir), "ncu's profile");
  }

  rl::Ceilings load_ceilings(const CommonOptions& o, Invocation& in, const std::string& gpu) const {
    if (measure_) {
      Json merged;
      for (const auto& run : kCeilingRuns) {
        const Json report = measured(run, o.device, in);
        if (merged.is_null()) {
          merged = report;
        } else {
          for (const Json& row : report["results"]) merged["results"].push_back(row);
        }
      }
      return rl::ceilings_from_report(merged, "measured now");
    }
    const std::string path = ceilings_.empty() ? default_ceilings(gpu) : ceilings_;
    return rl::ceilings_from_report(read_report(path), path);
  }

  // One in-process tkprobe run of the ceilings' probes, its report.
  static Json measured(std::vector<std::string> args, int device, Invocation& in) {
    args.insert(args.begin(), "tkprobe");
    args.insert(args.end(), {"--json", "-", "--device", std::to_string(device)});
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    in.err << fmt::format("roofline: measuring the ceilings ({})...\n", fmt::join(args, " "));
    const int code = run_cli(int(argv.size()), argv.data(), out, err);
    if (code != int(Exit::ok)) {
      in.err << err.str();
      throw NoDeviceError(fmt::format("measuring the ceilings ({}) exited {}", args[1], code));
    }
    return parse_report(out.str(), "the ceilings' run");
  }

  // The suite baselines in the checkout that holds the binary: results/*/suite.json in the nearest folder
  // above it that has any (build/tkprobe -> results/h200/suite.json).
  static std::vector<fs::path> suite_baselines() {
    std::error_code ec;
    for (fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path(); !ec && dir.has_relative_path();
         dir = dir.parent_path()) {
      std::vector<fs::path> suites;
      for (const auto& entry : fs::directory_iterator(dir / "results", ec)) {
        if (fs::exists(entry.path() / "suite.json")) suites.push_back(entry.path() / "suite.json");
      }
      ec.clear();
      std::sort(suites.begin(), suites.end());
      if (!suites.empty()) return suites;
    }
    return {};
  }

  // The suite baseline of the GPU the kernels ran on.
  static std::string default_ceilings(const std::string& gpu) {
    if (gpu.empty()) {
      throw UsageError(
          "the profile names no GPU (no device__attribute_display_name column) to find its suite "
          "baseline by: give --ceilings REPORT or --measure-ceilings");
    }
    std::vector<std::string> held;
    for (const fs::path& suite : suite_baselines()) {
      const std::string name = read_report(suite.string()).value("device", Json::object()).value("name", "");
      if (name == gpu) return suite.string();
      held.push_back(fmt::format("{} ({})", name, (suite.parent_path().filename() / "suite.json").string()));
    }
    const std::string holds = held.empty() ? "none" : fmt::format("{}", fmt::join(held, ", "));
    throw UsageError(
        fmt::format("no suite baseline of {} beside this binary (results/ holds {}): give --ceilings "
                    "REPORT (a `tkprobe all` report of this GPU model) or --measure-ceilings",
                    gpu, holds));
  }

  static std::string finding(const rl::Kernel& k, const std::vector<rl::Bound>& b) {
    std::string text = fmt::format("{} (id {}): {:.0f}% of {} ({})", k.name, k.id, b[0].pct, b[0].ceiling.name,
                                   b[0].ceiling.source);
    if (b.size() > 1) text += fmt::format("; next {} at {:.0f}%", b[1].ceiling.name, b[1].pct);
    return text;
  }

  std::vector<std::string> program_;
  std::string import_, export_, kernel_, ceilings_;
  int skip_ = 0, count_ = 0;
  bool measure_ = false, range_ = false;
};

}  // namespace

std::unique_ptr<Command> roofline_command() { return std::make_unique<RooflineCommand>(); }

}  // namespace tkprobe
