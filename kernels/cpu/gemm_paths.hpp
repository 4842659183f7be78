#pragma once
// The two builds of the GEMM body behind gemm_forward, exposed so tests can check both
// whichever one the machine dispatches to. Same semantics as gemm_forward.

namespace twinsim::kernels::cpu::detail {

// Built with the project's portable flags (SSE2 on x86-64).
void gemm_portable(const float* a, const float* b, float* c, int m, int n, int k, bool trans_a,
                   bool trans_b, float alpha, float beta);

// Built with -mavx2 -mfma (x86/gemm_avx2.cpp); only present when TWINSIM_GEMM_AVX2 is
// defined, and only safe to call when cpu_has_avx2_fma().
void gemm_avx2(const float* a, const float* b, float* c, int m, int n, int k, bool trans_a,
               bool trans_b, float alpha, float beta);

bool cpu_has_avx2_fma();

// The all-float GEMM, gemm_forward<float, float, float>: gemm_avx2 when the CPU has AVX2
// and FMA, gemm_portable otherwise. The 16-bit path runs it on its fp32 tiles.
void gemm_float(const float* a, const float* b, float* c, int m, int n, int k, bool trans_a,
                bool trans_b, float alpha, float beta);

}  // namespace twinsim::kernels::cpu::detail
