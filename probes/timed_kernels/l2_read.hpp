#pragma once
// Every SM reading a buffer held in L2 (bandwidth's L2 row, the l2 probe's footprint ladder): the
// buffer filled with a pattern, read l2_read_passes(bytes) times with L2-only 16-byte loads, timed by
// the harness, and the XOR of what was read checked against the host's.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/probe.hpp"

namespace tkprobe {

// Each launch reads at least kL2ReadBytesPerLaunch, so its fixed costs (launch, ramp, tail) weigh
// under a few percent; shorter launches' medians moved between runs
// (docs/decisions/005-l2-read-a-gib-per-launch.md). Passes stay odd: the XOR over all of them equals
// one pass's.
inline constexpr int kL2ReadMinPasses = 21;
inline constexpr double kL2ReadBytesPerLaunch = 1u << 30;
constexpr int l2_read_passes(std::size_t bytes) {
  const int passes = std::max(kL2ReadMinPasses, static_cast<int>(kL2ReadBytesPerLaunch / double(bytes)) + 1);
  return passes | 1;
}
static_assert(l2_read_passes(15u << 20) == 69 && l2_read_passes(60u << 20) == 21 && l2_read_passes(15u << 20) % 2);

struct L2Read {
  Measurement m;  // TB/s read
  int passes = 0;
  std::uint32_t xor_read = 0, xor_expected = 0;
  bool right() const { return xor_read == xor_expected; }
};

L2Read measure_l2_read(ProbeContext& ctx, std::size_t bytes, std::string_view label);

}  // namespace tkprobe
