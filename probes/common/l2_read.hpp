#pragma once
// Every SM reading a buffer held in L2 (bandwidth's L2 row, the l2 probe's footprint ladder): the
// buffer filled with a pattern, read kL2ReadPasses times with L2-only 16-byte loads, timed by the
// harness, and the XOR of what was read checked against the host's.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/probe.hpp"

namespace tkprobe {

inline constexpr int kL2ReadPasses = 21;  // odd: the XOR over all passes equals one pass's

struct L2Read {
  Measurement m;  // TB/s read
  std::uint32_t xor_read = 0, xor_expected = 0;
  bool right() const { return xor_read == xor_expected; }
};

L2Read measure_l2_read(ProbeContext& ctx, std::size_t bytes, std::string_view label);

}  // namespace tkprobe
