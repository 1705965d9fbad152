#pragma once
// The DSL's bf16 GEMM (kernels/gemm/gemm.cu): C = A B^T with A (M x K) and B (N x K) row-major,
// K contiguous in both (cuBLAS's "TN"), C (M x N) row-major bf16, f32 accumulation. One block of
// three warpgroups per SM walks 128 x 256 tiles of C: a producer that streams 64-wide K slices of
// A and B through a 4-stage ring with the TMA, and two consumers that multiply them with wgmma.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <string>

namespace gemm {

inline constexpr int kBlockM = 128, kBlockN = 256, kBlockK = 64;

struct Shape {
  int m, n, k;
};

// Why a shape cannot run ("" when it can): every dimension a positive multiple of its tile.
std::string refusal(Shape s);

// A GEMM ready to launch: its tensor maps are encoded once, outside any timed launch.
class Gemm {
 public:
  Gemm(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, Shape s);  // s must pass refusal()
  void operator()(cudaStream_t stream) const;

 private:
  CUtensorMap a_map_, b_map_, c_map_;
  Shape shape_;
  int sms_ = 0;  // one persistent block per SM
};

}  // namespace gemm
