#pragma once
// The SM clock around a kernel that cannot stamp a ClockWindow itself (its interface has no room
// for one, or it is a library's), for Harness::time_kernel_rate's ClockBracket. Before a sample,
// a grid of a few tiny blocks per SM stamps every SM (clock64 and %globaltimer); after it, one
// thread reads the stamp of the SM it landed on and its own: cycles over nanoseconds on one SM,
// across the timed launch. The harness runs both outside the timed events. All SMs share one
// clock, so any SM's window is the kernel's.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/device_buffer.hpp"
#include "src/kernel_clock.cuh"

namespace tkprobe {

// One SM's stamp; `generation` says which sample wrote it, so a stamp left from an earlier
// sample (an SM the last stamping grid missed) gives an empty window, not a wrong one.
struct SmStamp {
  ClockStamp stamp;
  std::uint64_t generation;
};

// Keeps `stream` busy for `ns` nanoseconds (one thread spinning on %globaltimer). Launched just
// before a sample's start event, it lets the host enqueue the timed launch while the GPU still
// works, so a launch of a few microseconds is timed without the host's path to it (nvbench's
// blocking kernel; scripts/compare_*.py do the same with torch.cuda._sleep).
void hold_stream(cudaStream_t stream, std::uint64_t ns);

class SmClockBracket {
 public:
  explicit SmClockBracket(int sms);
  void begin(cudaStream_t stream);  // stamps every SM
  void end(cudaStream_t stream);    // closes the window on one SM
  const ClockWindow* window() const { return window_.get(); }

 private:
  static constexpr int kSlots = 1024;  // above any %smid: SMs are numbered below %nsmid
  int blocks_;
  std::uint64_t generation_ = 0;
  DeviceBuffer<SmStamp> stamps_;
  DeviceBuffer<ClockWindow> window_;
};

}  // namespace tkprobe
