#pragma once
// `--devices all|0,2,5`: one run per selected GPU. Each device's run is this executable again,
// started as a child process with `--device N` and left to run beside the others, each on its own
// GPU. Side by side, because no probe of one device moves data to another GPU: a card's figures
// depend on its own SMs, caches and HBM, and what it shares with the others (the node's power and
// cooling, a CPU core to wait on its kernels) it shares the same way when a training job runs on every
// card at once, which is what a fleet check is for. Processes, not threads: each run owns one CUDA
// context, its NVML readings and its failures; a CUDA error that poisons a context stops one device's
// run, not the others'. Probes that measure between devices (Probe::spans_devices: p2p) run in the
// parent once these are done, so that their traffic disturbs no device's own run.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tkprobe {

// The indices a --devices list names, in the order given; std::nullopt for "all". Throws UsageError
// on a malformed list or an index given twice, its message naming the list (CLI11 puts the option's
// name before it).
std::optional<std::vector<int>> parse_device_list(std::string_view text);

// The devices a list selects on a machine of `count` CUDA devices (all of them for std::nullopt).
// Throws NoDeviceError naming the index that is not there and the valid ones.
std::vector<int> select_devices(const std::optional<std::vector<int>>& list, int count);

// One device's command line: `args` (this run's, args[0] the program) without --devices, --json,
// --seed and --probes and their values, then `--device DEVICE --json JSON_PATH --seed SEED`, and
// `--probes` with `probes` where it is not empty (`tkprobe all`: the probes run per device).
std::vector<std::string> device_run_args(const std::vector<std::string>& args, int device, const std::string& json_path,
                                         std::uint64_t seed, const std::vector<std::string>& probes);

// This process's executable (/proc/self/exe), which each device's run starts again.
std::string self_executable();

// How a child ended: its exit code, or 128 + the signal that killed it (as a shell says).
struct ChildExit {
  int code = 0;
  bool signaled = false;
};

// Starts `program` (looked up on PATH where it holds no '/') with `argv` (argv[0] included): stdin
// /dev/null, stdout into the file `out`, stderr into `err`. Throws std::runtime_error if it cannot start.
pid_t start_child(const std::string& program, const std::vector<std::string>& argv, const std::string& out,
                  const std::string& err);
ChildExit wait_for(pid_t pid);

// A fresh folder under the temp directory (`prefix`-XXXXXX), removed with everything in it.
struct ScratchFolder {
  std::filesystem::path path;
  explicit ScratchFolder(const std::string& prefix);
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
};

// Starts `exe` once per command line, all at once (stdin and stdout /dev/null, stderr into the
// matching file of `logs`), and waits for every one. Throws std::runtime_error if one cannot start
// (those already started are waited for first).
std::vector<ChildExit> run_side_by_side(const std::string& exe, const std::vector<std::vector<std::string>>& commands,
                                        const std::vector<std::string>& logs);

}  // namespace tkprobe
