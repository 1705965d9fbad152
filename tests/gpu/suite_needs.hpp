#pragma once
// What each GPU test suite's code needs of the GPU (src/requirements.hpp), so that gpu_tests skips,
// with the reason, the suites this GPU or this build cannot run, as `tkprobe` skips their rows.
#include <cctype>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/probe.hpp"
#include "src/requirements.hpp"

namespace tkprobe::test {

// smem-banks: SmemBanks, the name of a probe's suite in its gpu_test.cpp.
inline std::string camel_case(std::string_view probe) {
  std::string name;
  bool upper = true;
  for (char c : probe) {
    if (c == '-') {
      upper = true;
    } else {
      name += upper ? char(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
  }
  return name;
}

// The suites of the DSL and its kernels (built for sm_90a alone) and of the harness (portable), by
// the prefix of their names.
inline const std::pair<std::string_view, Requirements> kOtherSuites[] = {
    {"Dsl", {.sm90a = {Sm90aFeature::sm90a_kernels}}},
    {"Attention", {.sm90a = {Sm90aFeature::sm90a_kernels}}},
    {"Based", {.sm90a = {Sm90aFeature::sm90a_kernels}}},
    {"Decode", {}},  // the decode kernel is portable
    {"Harness", {}},
    {"Counters", {}},
    {"Compare", {}},
};

// What `suite` needs: a probe's suite (its CamelCase name, with "Probe" where other suites share the
// name) what the probe declares, another what kOtherSuites gives; nullopt where neither names it.
inline std::optional<Requirements> suite_needs(std::string_view suite,
                                               const std::vector<std::unique_ptr<Probe>>& probes) {
  for (const auto& p : probes) {
    const std::string name = camel_case(p->name());
    if (suite == name || suite == name + "Probe") return p->needs();
  }
  for (const auto& [prefix, needs] : kOtherSuites) {
    if (suite.starts_with(prefix)) return needs;
  }
  return std::nullopt;
}

}  // namespace tkprobe::test
