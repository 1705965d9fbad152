#pragma once
// The SM clock, measured inside a timed kernel: clock64() cycles against %globaltimer
// nanoseconds over the same stretch of the kernel. Under heavy load the SM clock sits well
// below what NVML reads just before and after a launch, so clock peaks use this figure.
#include <cstdint>

namespace tkprobe {

struct ClockStamp {
  std::uint64_t cycles;
  std::uint64_t ns;
};

// Written by one thread at the start and end of a kernel's timed region.
struct ClockWindow {
  ClockStamp begin;
  ClockStamp end;
};

// Where and when one block ran: its SM and %globaltimer at the start and end of its timed region.
// Blocks that were meant to share an SM but did not run at the same time show up here.
struct BlockSpan {
  std::uint32_t sm;
  std::uint32_t unused;
  std::uint64_t begin_ns, end_ns;
};

// MHz = cycles per microsecond. NaN when the window is empty or unwritten.
inline double window_mhz(const ClockWindow& w) {
  const double ns = static_cast<double>(w.end.ns - w.begin.ns);
  const double cycles = static_cast<double>(w.end.cycles - w.begin.cycles);
  return (w.end.ns > w.begin.ns && w.end.cycles > w.begin.cycles) ? cycles / ns * 1e3 : __builtin_nan("");
}

#ifdef __CUDACC__
__device__ __forceinline__ std::uint64_t sm_cycles() {
  std::uint64_t c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
  return c;
}

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
  return t;
}

__device__ __forceinline__ ClockStamp clock_stamp() { return {sm_cycles(), global_ns()}; }

__device__ __forceinline__ std::uint32_t sm_id() {
  std::uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// Thread 0 records its block's span; `begin` is the stamp it took when the timed region started.
__device__ __forceinline__ void record_span(BlockSpan* spans, ClockStamp begin, ClockStamp end) {
  if (threadIdx.x == 0) spans[blockIdx.x] = BlockSpan{sm_id(), 0, begin.ns, end.ns};
}
#endif

}  // namespace tkprobe
