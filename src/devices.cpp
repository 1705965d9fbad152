#include "src/devices.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "src/errors.hpp"

extern char** environ;

namespace tkprobe {
namespace {

constexpr std::size_t kMaxIndexDigits = 9;  // below INT_MAX

// The options a device's run gets its own values for.
constexpr const char* kReplaced[] = {"--devices", "--json", "--seed", "--probes"};

[[noreturn]] void bad_list(std::string_view text, std::string_view why) {
  throw UsageError(fmt::format("'{}': {} (give all, or device indices separated by commas, e.g. 0,2,5)", text, why));
}

// Whether `arg` is option `name` or `name=VALUE`; `takes_next` says the value is the next argument.
bool is_option(const std::string& arg, std::string_view name, bool* takes_next) {
  *takes_next = arg == name;
  return *takes_next || (arg.size() > name.size() && arg.compare(0, name.size(), name) == 0 && arg[name.size()] == '=');
}

}  // namespace

std::optional<std::vector<int>> parse_device_list(std::string_view text) {
  if (text == "all") return std::nullopt;
  std::vector<int> indices;
  std::size_t at = 0;
  for (;;) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, comma - at);
    if (item.empty()) bad_list(text, "an empty entry");
    if (item.find_first_not_of("0123456789") != std::string_view::npos || item.size() > kMaxIndexDigits) {
      bad_list(text, fmt::format("'{}' is not a device index", item));
    }
    const int index = std::stoi(std::string(item));
    if (std::find(indices.begin(), indices.end(), index) != indices.end()) {
      bad_list(text, fmt::format("device {} is given twice", index));
    }
    indices.push_back(index);
    if (comma == text.size()) return indices;
    at = comma + 1;
  }
}

std::vector<int> select_devices(const std::optional<std::vector<int>>& list, int count) {
  if (!list) {
    std::vector<int> all(count);
    for (int i = 0; i < count; ++i) all[i] = i;
    return all;
  }
  for (int index : *list) {
    if (index >= count) {
      throw NoDeviceError(
          fmt::format("--devices: device {} not present: this machine has {} CUDA device(s) (valid: "
                      "0{})",
                      index, count, count > 1 ? fmt::format("..{}", count - 1) : ""));
    }
  }
  return *list;
}

std::vector<std::string> device_run_args(const std::vector<std::string>& args, int device, const std::string& json_path,
                                         std::uint64_t seed, const std::vector<std::string>& probes) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    bool takes_next = false;
    const bool replaced = std::any_of(std::begin(kReplaced), std::end(kReplaced),
                                      [&](const char* name) { return is_option(args[i], name, &takes_next); });
    if (!replaced) {
      out.push_back(args[i]);
    } else if (takes_next) {
      ++i;
    }
  }
  for (const std::string& a : {std::string("--device"), std::to_string(device), std::string("--json"), json_path,
                               std::string("--seed"), std::to_string(seed)}) {
    out.push_back(a);
  }
  if (!probes.empty()) {
    std::string list;
    for (const auto& p : probes) list += (list.empty() ? "" : ",") + p;
    out.insert(out.end(), {"--probes", list});
  }
  return out;
}

pid_t start_child(const std::string& program, const std::vector<std::string>& argv, const std::string& out,
                  const std::string& err) {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int status = posix_spawnp(&pid, program.c_str(), &files, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (status != 0) throw std::runtime_error(fmt::format("cannot start {}: {}", program, std::strerror(status)));
  return pid;
}

ChildExit wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(fmt::format("waitpid: {}", std::strerror(errno)));
  }
  if (WIFSIGNALED(status)) return {128 + WTERMSIG(status), true};
  return {WEXITSTATUS(status), false};
}

ScratchFolder::ScratchFolder(const std::string& prefix) {
  std::string name = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!mkdtemp(name.data())) throw std::runtime_error(fmt::format("cannot make a folder {}", name));
  path = name;
}

ScratchFolder::~ScratchFolder() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::string self_executable() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

std::vector<ChildExit> run_side_by_side(const std::string& exe, const std::vector<std::vector<std::string>>& commands,
                                        const std::vector<std::string>& logs) {
  std::vector<pid_t> started;
  std::string failure;
  for (std::size_t i = 0; i < commands.size() && failure.empty(); ++i) {
    try {
      started.push_back(start_child(exe, commands[i], "/dev/null", logs[i]));
    } catch (const std::runtime_error& e) {
      failure = e.what();
    }
  }
  std::vector<ChildExit> exits;
  for (pid_t pid : started) exits.push_back(wait_for(pid));
  if (!failure.empty()) throw std::runtime_error(failure);
  return exits;
}

}  // namespace tkprobe
