#include "kernels/cuda/gemm.hpp"

#include "kernels/common/gemm_backward.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"

namespace twinsim::kernels::cuda {
namespace {

cudaDataType_t storage_type(GemmType type) {
  switch (type) {
    case GemmType::bf16: return CUDA_R_16BF;
    case GemmType::fp16: return CUDA_R_16F;
    default: return CUDA_R_32F;
  }
}

cublasComputeType_t compute_type(GemmType type) {
  return type == GemmType::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

}  // namespace

// cuBLAS is column-major. A row-major [r, c] matrix is the same memory as a column-major
// [c, r] one, i.e. its transpose, so C = op(A) op(B) in row-major is computed as the
// column-major C^T = op(B)^T op(A)^T: swap the operands and pass n, m for the sizes.
// A row-major matrix of c columns has leading dimension c.
void gemm_forward_mixed(GemmType ab, GemmType c_type, const void* a, const void* b, void* c, int m, int n, int k,
                        bool trans_a, bool trans_b, float alpha, float beta) {
  if (m == 0 || n == 0) return;
  int lda = trans_a ? m : k;  // A stored [k, m] or [m, k]
  int ldb = trans_b ? k : n;  // B stored [n, k] or [k, n]
  CUBLAS_CHECK(cublasGemmEx(cublas_handle(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                            trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, storage_type(ab), ldb, a,
                            storage_type(ab), lda, &beta, c, storage_type(c_type), n, compute_type(ab),
                            CUBLAS_GEMM_DEFAULT));
}

void gemm_forward_typed(GemmType type, const void* a, const void* b, void* c, int m, int n, int k,
                        bool trans_a, bool trans_b, float alpha, float beta) {
  gemm_forward_mixed(type, type, a, b, c, m, n, k, trans_a, trans_b, alpha, beta);
}

void gemm_forward(const float* a, const float* b, float* c, int m, int n, int k, bool trans_a,
                  bool trans_b, float alpha, float beta) {
  gemm_forward_typed(GemmType::fp32, a, b, c, m, n, k, trans_a, trans_b, alpha, beta);
}

void gemm_backward(const float* a, const float* b, const float* dc, float* da, float* db, int m,
                   int n, int k, bool trans_a, bool trans_b, bool accumulate) {
  const auto forward = [](const float* x, const float* y, float* z, int rows, int cols, int inner, bool tx,
                          bool ty, float alpha, float beta) {
    gemm_forward(x, y, z, rows, cols, inner, tx, ty, alpha, beta);
  };
  gemm_backward_via(forward, a, b, dc, da, db, m, n, k, trans_a, trans_b, accumulate);  // kernels/common/gemm_backward.hpp
}

}  // namespace twinsim::kernels::cuda
