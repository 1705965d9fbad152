#pragma once
// Launchers for the wgmma throughput kernel (wgmma_kernels.cuh), run through tensor_bench by wgmma,
// tensor-cores and occupancy. Each block is one warpgroup that loads A, -A and B into shared memory
// once and then issues wgmma back to back on them: A*B, then pairs of -A*B and A*B, so the
// accumulators hold exactly one product at the end however long the kernel ran (and never overflow
// f16 or s32), and every timed run is checked against the host's product.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "probes/measure/tensor_types.hpp"
#include "src/kernel_clock.cuh"

namespace tkprobe::tensor {

inline constexpr int kWarpgroupThreads = 128;
inline constexpr int kSwizzleRowBytes = 128;  // one 128B-swizzled row holds the whole K tile
inline constexpr int kKSlices = kSwizzleRowBytes / kRowBytesPerK;  // wgmma per pass: 4
inline constexpr int kATileBytes = kM * kSwizzleRowBytes;          // 8 KiB
inline constexpr int kSwizzleAtomBytes = 8 * kSwizzleRowBytes;     // tiles start 1024-byte aligned
inline constexpr int kAPlusOffset = 0, kAMinusOffset = kATileBytes, kBOffset = 2 * kATileBytes;
constexpr int wgmma_image_bytes(int n) { return kBOffset + n * kSwizzleRowBytes; }
// Registers of A a thread holds per pass in the RS form: 4 slices x 4 registers.
inline constexpr int kAFragmentRegs = 4;

// The kernel unrolls this many pairs per loop trip; the launcher asks for a multiple of it so
// the remainder loop (where ptxas waits on every trip) never runs.
inline constexpr int kPairUnroll = 4;

// Non-tensor work each thread issues after every wgmma, while the tensor cores run it (the overlap
// probe): none, FFMA, or MUFU.EX2. It cycles over kFillerChains independent registers, so what it
// costs is issue slots and its pipe, not a dependent chain's latency.
enum class Filler { none, fma, ex2 };
inline constexpr int kFillerChains = 8;
inline constexpr std::uint32_t kUnreachableNan = 0x7fc00001u;  // a quiet NaN whose payload arithmetic never makes

struct WgmmaVariant {
  DType dtype;
  Acc acc;
  int n;
  ASource a;
};

struct WgmmaParams {
  const std::uint8_t* image;         // wgmma_image_bytes(n): A, -A, B as they sit in shared memory
  const std::uint32_t* a_fragments;  // RS: [sign][slice][thread][register]
  long long pairs;                   // (-A*B, A*B) pairs after the first A*B
  std::uint32_t* out;                // block 0's accumulator registers: [thread][register]
  ClockWindow* clock;                // block 0's clock64 / globaltimer stamps
  BlockSpan* spans;                  // [block]: where and when each block ran
};

// The compiled kernel for a variant; nullptr when the variant is not one the ISA allows.
const void* wgmma_kernel(const WgmmaVariant& v);

// Shared memory the kernel needs: the image plus room to align it to the swizzle atom.
constexpr int wgmma_smem_bytes(int n) { return wgmma_image_bytes(n) + kSwizzleAtomBytes; }

}  // namespace tkprobe::tensor
