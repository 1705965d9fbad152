#pragma once
// The 32-bank x 4-byte model of shared memory, as plain constexpr C++ (host-tested, and
// checked against the hardware by smem-banks' timings and by ncu's wavefront counts).
//
// The pipe serves 128 bytes a cycle. A warp-wide request is split into phases of 128 bytes of
// request: 32 threads of 4-byte accesses, 16 of 8 bytes, 8 of 16 bytes (an ldmatrix 8x8 matrix
// is one phase of eight 16-byte rows). Within a phase each bank returns one distinct 4-byte
// word per wavefront; threads reading the same word share it (broadcast). So a phase costs
// max over banks of (distinct words in that bank), and the request costs the sum over phases.
#include <cstdint>
#include <span>

namespace tkprobe::banks {

inline constexpr int kBanks = 32;
inline constexpr int kBankBytes = 4;
inline constexpr int kPhaseBytes = kBanks * kBankBytes;  // 128
inline constexpr int kWarpSize = 32;

// Wavefronts for one request: `addresses` holds each participating thread's byte address,
// in thread order; every access is `width` bytes (4, 8 or 16) and aligned to it.
constexpr int wavefronts(std::span<const std::uint32_t> addresses, int width) {
  const int per_phase = kPhaseBytes / width;
  int total = 0;
  for (std::size_t first = 0; first < addresses.size(); first += per_phase) {
    std::uint32_t words[kPhaseBytes / kBankBytes] = {};  // distinct words of this phase
    int n_words = 0;
    for (std::size_t t = first; t < first + per_phase && t < addresses.size(); ++t) {
      for (int w = 0; w < width / kBankBytes; ++w) {
        const std::uint32_t word = addresses[t] / kBankBytes + w;
        bool seen = false;
        for (int i = 0; i < n_words; ++i) seen |= words[i] == word;
        if (!seen) words[n_words++] = word;
      }
    }
    int worst = 0;
    for (int bank = 0; bank < kBanks; ++bank) {
      int in_bank = 0;
      for (int i = 0; i < n_words; ++i) in_bank += static_cast<int>(words[i] % kBanks) == bank;
      worst = worst > in_bank ? worst : in_bank;
    }
    total += worst;
  }
  return total;
}

// The fewest wavefronts a warp-wide access of this width can take.
constexpr int ideal_wavefronts(int width) { return kWarpSize * width / kPhaseBytes; }

// A warp in which lane t reads element t * stride of `width`-byte elements.
constexpr int strided_wavefronts(int width, int stride) {
  std::uint32_t addresses[kWarpSize] = {};
  for (int t = 0; t < kWarpSize; ++t) addresses[t] = static_cast<std::uint32_t>(t * stride * width);
  return wavefronts(addresses, width);
}

// Conflict ways: how many times the ideal number of wavefronts the access takes.
constexpr double strided_ways(int width, int stride) {
  return static_cast<double>(strided_wavefronts(width, stride)) / ideal_wavefronts(width);
}

}  // namespace tkprobe::banks
