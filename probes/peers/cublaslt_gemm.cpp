#include "probes/peers/cublaslt_gemm.hpp"

#include <string>

#include "src/errors.hpp"

namespace tkprobe {
namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw CudaError(std::string(what) + ": " + cublasLtGetStatusName(status) + " (" + cublasLtGetStatusString(status) + ")");
  }
}

}  // namespace

// cuBLAS is column-major: row-major C (M x N) is column-major C^T (N x M) = B A^T, where the
// row-major B (N x K) is a column-major K x N matrix used transposed and the row-major A
// (M x K) a column-major K x M one used as is.
CublasLtGemm::CublasLtGemm(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, gemm::Shape s)
    : a_(a), b_(b), c_(c) {
  check(cublasLtCreate(&handle_), "cublasLtCreate");
  check(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t transposed = CUBLAS_OP_T;
  check(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &transposed, sizeof(transposed)),
        "cublasLtMatmulDescSetAttribute");
  check(cublasLtMatrixLayoutCreate(&lhs_layout_, CUDA_R_16BF, s.k, s.n, s.k), "cublasLtMatrixLayoutCreate(B)");
  check(cublasLtMatrixLayoutCreate(&rhs_layout_, CUDA_R_16BF, s.k, s.m, s.k), "cublasLtMatrixLayoutCreate(A)");
  check(cublasLtMatrixLayoutCreate(&c_layout_, CUDA_R_16BF, s.n, s.m, s.n), "cublasLtMatrixLayoutCreate(C)");
  TK_CUDA(cudaMalloc(&workspace_, kWorkspaceBytes));
  cublasLtMatmulPreference_t preference = nullptr;
  check(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const std::size_t workspace = kWorkspaceBytes;
  check(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                             sizeof(workspace)),
        "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t best{};
  int found = 0;
  const cublasStatus_t heuristic = cublasLtMatmulAlgoGetHeuristic(handle_, op_, lhs_layout_, rhs_layout_, c_layout_,
                                                                  c_layout_, preference, 1, &best, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  check(heuristic, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) throw CudaError("cublasLtMatmulAlgoGetHeuristic found no algorithm for this GEMM");
  algo_ = best.algo;
}

CublasLtGemm::~CublasLtGemm() {
  cudaFree(workspace_);
  cublasLtMatrixLayoutDestroy(c_layout_);
  cublasLtMatrixLayoutDestroy(rhs_layout_);
  cublasLtMatrixLayoutDestroy(lhs_layout_);
  cublasLtMatmulDescDestroy(op_);
  cublasLtDestroy(handle_);
}

void CublasLtGemm::operator()(cudaStream_t stream) const {
  const float one = 1.0f, zero = 0.0f;
  check(cublasLtMatmul(handle_, op_, &one, b_, lhs_layout_, a_, rhs_layout_, &zero, c_, c_layout_, c_, c_layout_, &algo_,
                       workspace_, kWorkspaceBytes, stream),
        "cublasLtMatmul");
}

}  // namespace tkprobe
