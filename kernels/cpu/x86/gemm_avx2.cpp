// The GEMM body compiled with -mavx2 -mfma (see kernels/CMakeLists.txt); gemm_forward
// calls it only on CPUs that report both. Eigen picks 8-wide FMA kernels from these flags,
// which is what brings it near OpenBLAS (bench/bench_gemm.cpp).
//
// Renaming the Eigen namespace gives every Eigen function instantiated here a different
// mangled name from the portable build's, so no AVX2 copy of an Eigen inline function can
// be chosen by the linker for code running on a CPU without AVX2.
#define Eigen twinsim_eigen_avx2
#include "kernels/cpu/gemm_eigen.hpp"
#include "kernels/cpu/gemm_paths.hpp"

namespace twinsim::kernels::cpu::detail {

void gemm_avx2(const float* a, const float* b, float* c, int m, int n, int k, bool trans_a,
               bool trans_b, float alpha, float beta) {
  gemm_eigen(a, b, c, m, n, k, trans_a, trans_b, alpha, beta);
}

}  // namespace twinsim::kernels::cpu::detail
