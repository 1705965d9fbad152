#pragma once
// The one-instruction kernel behind wgmma-layout (probes/wgmma-layout/wgmma_layout_kernels.cu): a warpgroup
// copies two raw shared-memory images (A's and B's regions) into place, issues a single
// wgmma.mma_async m64n128k16 bf16 -> f32 through the descriptors it is given, and writes every
// accumulator register out, so the host can decode which bytes fed which product.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace tkprobe::wgmma_layout {

inline constexpr int kM = 64, kN = 128, kK = 16;  // m64n128k16: the instruction every decode uses
inline constexpr int kThreads = 128;              // one warpgroup
inline constexpr int kAccRegs = kM * kN / kThreads;  // f32 accumulators per thread
inline constexpr int kARegs = 4;                     // A from registers: 4 x bf16x2 per thread
inline constexpr int kRegionAlign = 1024;  // regions start on the 128B swizzle's repeat

// Which operands come from where: A from shared memory (SS) or registers (RS), and whether the
// shared operands are K-major or MN-major (imm-trans-a/b).
struct Form {
  bool a_in_registers = false;
  bool mn_major = false;
};

struct Params {
  const std::uint8_t* a_image = nullptr;  // A's region as it sits in shared memory (SS only)
  int a_bytes = 0;                        // a multiple of kRegionAlign
  const std::uint8_t* b_image = nullptr;
  int b_bytes = 0;
  // Descriptors whose start-address field is relative to their region; the kernel adds the
  // region's shared address.
  std::uint64_t desc_a = 0, desc_b = 0;
  const std::uint32_t* a_registers = nullptr;  // RS: [thread][kARegs]
  float* out = nullptr;                        // [thread][kAccRegs]
};

// Dynamic shared memory a launch needs for regions of these sizes.
constexpr int smem_bytes(int a_bytes, int b_bytes) { return a_bytes + b_bytes + kRegionAlign; }

void run(Form form, const Params& p, cudaStream_t stream);

}  // namespace tkprobe::wgmma_layout
