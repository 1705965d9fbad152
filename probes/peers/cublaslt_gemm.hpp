#pragma once
// cuBLASLt's bf16 GEMM on the same operands as the DSL's (kernels/gemm/gemm.hpp): C = A B^T,
// A (M x K) and B (N x K) row-major, C (M x N) row-major bf16, f32 compute. The algorithm is
// cuBLASLt's own first choice for the shape (its heuristic), with a 32 MiB workspace.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "kernels/gemm/gemm.hpp"

namespace tkprobe {

class CublasLtGemm {
 public:
  CublasLtGemm(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, gemm::Shape s);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;
  void operator()(cudaStream_t stream) const;

 private:
  const __nv_bfloat16 *a_, *b_;
  __nv_bfloat16* c_;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  // cuBLASLt's A is our B (transposed), its B our A: see the constructor.
  cublasLtMatrixLayout_t lhs_layout_ = nullptr, rhs_layout_ = nullptr, c_layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  void* workspace_ = nullptr;
};

}  // namespace tkprobe
