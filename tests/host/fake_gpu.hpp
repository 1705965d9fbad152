#pragma once
// A GPU as its properties would describe it, for host tests of the rules that depend on one.
#include "src/device.hpp"

namespace fake {

inline tkprobe::DeviceInfo gpu(const char* name, int cc, int sms = 0, int max_mhz = 0) {
  tkprobe::DeviceInfo d;
  d.name = name;
  d.cc_major = cc / 10;
  d.cc_minor = cc % 10;
  d.sms = sms;
  d.sm_clock_max_mhz = max_mhz;
  return d;
}

}  // namespace fake
