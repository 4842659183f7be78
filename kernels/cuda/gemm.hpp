#pragma once
// Dense matrix products on the GPU through cuBLAS. Same semantics and row-major layouts
// as kernels/cpu/gemm.hpp; all pointers are device pointers.

namespace twinsim::kernels::cuda {

// Storage type of A, B and C. Accumulation is always fp32 (CUBLAS_COMPUTE_32F), as in
// mixed-precision training (Micikevicius et al. 2018, Sec. 3.2). tf32 keeps fp32 storage
// but lets the tensor cores round the inputs to TF32 (10-bit mantissa): faster, ~1e-3 error.
enum class GemmType { fp32, tf32, bf16, fp16 };

// C[m, n] = alpha op(A) op(B) + beta C with fp32 storage and exact fp32 math.
void gemm_forward(const float* a, const float* b, float* c, int m, int n, int k, bool trans_a,
                  bool trans_b, float alpha = 1.0f, float beta = 0.0f);

// The same product for any GemmType; a, b, c point to elements of that type
// (__nv_bfloat16 / __half for bf16 / fp16). alpha and beta are fp32.
void gemm_forward_typed(GemmType type, const void* a, const void* b, void* c, int m, int n, int k,
                        bool trans_a, bool trans_b, float alpha = 1.0f, float beta = 0.0f);

// A and B stored as ab, C as c: equal types, or 16-bit A and B with fp32 C (the
// combinations cublasGemmEx takes with CUBLAS_COMPUTE_32F: cuBLAS docs, cublasGemmEx).
// A 16-bit C is rounded once from the fp32 sum alpha op(A) op(B) + beta C.
void gemm_forward_mixed(GemmType ab, GemmType c_type, const void* a, const void* b, void* c, int m, int n, int k,
                        bool trans_a, bool trans_b, float alpha = 1.0f, float beta = 0.0f);

// dA = dC op(B)^T, dB = op(A)^T dC in the storage layout of A and B (kernels/cpu/gemm.hpp).
void gemm_backward(const float* a, const float* b, const float* dc, float* da, float* db, int m,
                   int n, int k, bool trans_a, bool trans_b, bool accumulate = false);

}  // namespace twinsim::kernels::cuda
