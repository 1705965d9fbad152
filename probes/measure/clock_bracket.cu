#include "probes/measure/clock_bracket.hpp"

namespace tkprobe {
namespace {

// Blocks per SM of the stamping grid: the block scheduler spreads a grid that fits at once over
// every SM, and a few per SM leave none out even where the spread is uneven.
constexpr int kStampBlocksPerSm = 4;
constexpr int kStampThreads = 32;

__global__ void stamp_sms(SmStamp* stamps, int slots, std::uint64_t generation) {
  const std::uint32_t sm = sm_id();
  if (threadIdx.x == 0 && sm < std::uint32_t(slots)) stamps[sm] = SmStamp{clock_stamp(), generation};
}

// An SM without this generation's stamp gives begin == end: window_mhz reads NaN, not a guess.
__global__ void close_window(const SmStamp* stamps, int slots, std::uint64_t generation, ClockWindow* window) {
  const ClockStamp now = clock_stamp();
  const std::uint32_t sm = sm_id();
  const bool stamped = sm < std::uint32_t(slots) && stamps[sm].generation == generation;
  *window = ClockWindow{stamped ? stamps[sm].stamp : now, now};
}

__global__ void spin_for(std::uint64_t ns) {
  const std::uint64_t start = global_ns();
  while (global_ns() - start < ns) {
  }
}

}  // namespace

void hold_stream(cudaStream_t stream, std::uint64_t ns) {
  spin_for<<<1, 1, 0, stream>>>(ns);
  TK_CUDA(cudaGetLastError());
}

SmClockBracket::SmClockBracket(int sms) : blocks_(kStampBlocksPerSm * sms), stamps_(kSlots), window_(1) {
  stamps_.poison(0);  // generation 0 is never used
}

void SmClockBracket::begin(cudaStream_t stream) {
  stamp_sms<<<blocks_, kStampThreads, 0, stream>>>(stamps_.get(), kSlots, ++generation_);
  TK_CUDA(cudaGetLastError());
}

void SmClockBracket::end(cudaStream_t stream) {
  close_window<<<1, 1, 0, stream>>>(stamps_.get(), kSlots, generation_, window_.get());
  TK_CUDA(cudaGetLastError());
}

}  // namespace tkprobe
