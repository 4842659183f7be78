#pragma once
// Dense matrix products on the CPU (Eigen). All matrices are row-major and contiguous.

namespace twinsim::kernels::cpu {

// C[m, n] = alpha * op(A) op(B) + beta * C, BLAS sgemm semantics in row-major storage.
// op(A) is [m, k]: A is stored [m, k], or [k, m] when trans_a. op(B) is [k, n]: B is
// stored [k, n], or [n, k] when trans_b. beta == 0 never reads C (it may hold garbage).
void gemm_forward(const float* a, const float* b, float* c, int m, int n, int k, bool trans_a,
                  bool trans_b, float alpha = 1.0f, float beta = 0.0f);

// Which build of the GEMM body gemm_forward runs on this CPU: "eigen-avx2-fma" (x86-64
// with AVX2 and FMA, chosen at run time) or "eigen-portable" (the build's own flags).
const char* gemm_backend();

// Gradients of C = op(A) op(B) (alpha 1) given dC [m, n], in the storage layout of A and B:
// dA = dC op(B)^T (stored like A), dB = op(A)^T dC (stored like B). Pass nullptr to skip
// one. accumulate adds into dA/dB instead of overwriting.
void gemm_backward(const float* a, const float* b, const float* dc, float* da, float* db, int m,
                   int n, int k, bool trans_a, bool trans_b, bool accumulate = false);

}  // namespace twinsim::kernels::cpu
