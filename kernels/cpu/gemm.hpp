#pragma once
// Dense matrix products on the CPU (Eigen). All matrices are row-major and contiguous.
#include <cstddef>

#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cpu {

// C[m, n] = alpha * op(A) op(B) + beta * C, BLAS sgemm semantics in row-major storage.
// op(A) is [m, k]: A is stored [m, k], or [k, m] when trans_a. op(B) is [k, n]: B is
// stored [k, n], or [n, k] when trans_b. beta == 0 never reads C (it may hold garbage).
//
// Each of A, B, C is float, bf16 or fp16, independently (all 27 combinations are
// instantiated in gemm.cpp). All-float runs Eigen directly. Any 16-bit operand takes the
// mixed-precision path of cuBLAS's bf16 GEMMs (CUBLAS_COMPUTE_32F): 16-bit operands are
// widened exactly to fp32, products accumulate in fp32, and alpha * acc + beta * C_old is
// rounded once to C's type (kernels/cpu/gemm_tiled.hpp says how it is tiled).
template <class TA, class TB, class TC>
void gemm_forward(const TA* a, const TB* b, TC* c, int m, int n, int k, bool trans_a, bool trans_b,
                  float alpha = 1.0f, float beta = 0.0f);

// The fp32 scratch the 16-bit path expands its tiles into, as cublasSetWorkspace: the
// executor hands in a buffer it allocated (and counts) once per process; nullptr (the
// default) makes the kernels use their own static buffer of the same size (tests,
// benchmarks). Three 256 x 256 tiles (op(A), op(B) and the fp32 accumulator of C); the
// tiles are fixed, so this is all the 16-bit path ever uses, whatever m, n and k are.
// One buffer serves one GEMM at a time (the executor runs one thread per process).
inline constexpr std::size_t kGemmWorkspaceFloats = 3 * 256 * 256;  // 196608 floats, 768 KiB
void set_gemm_workspace(float* workspace);  // at least kGemmWorkspaceFloats floats, or nullptr

// Which build of the GEMM body gemm_forward runs on this CPU: "eigen-avx2-fma" (x86-64
// with AVX2 and FMA, chosen at run time) or "eigen-portable" (the build's own flags).
const char* gemm_backend();

// Gradients of C = op(A) op(B) (alpha 1) given dC [m, n], in the storage layout of A and B:
// dA = dC op(B)^T (stored like A), dB = op(A)^T dC (stored like B). Pass nullptr to skip
// one. accumulate adds into dA/dB instead of overwriting. fp32 only.
void gemm_backward(const float* a, const float* b, const float* dc, float* da, float* db, int m,
                   int n, int k, bool trans_a, bool trans_b, bool accumulate = false);

}  // namespace twinsim::kernels::cpu
