#pragma once
// The Eigen GEMM body, private to kernels/cpu. It is compiled twice: by gemm.cpp with the
// build's portable flags and by x86/gemm_avx2.cpp with -mavx2 -mfma. The anonymous
// namespace gives each translation unit its own copy, so the linker never swaps the AVX2
// machine code into the portable path (an ODR trap when one inline function is built
// with two instruction sets).
#include <Eigen/Core>

namespace twinsim::kernels::cpu {
namespace {

using GemmMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// op(A) op(B) for one combination of transposes; noalias() lets Eigen write the
// product straight into C without a temporary (Eigen docs, "Aliasing").
template <typename OpA, typename OpB, typename C>
void product_into(const OpA& op_a, const OpB& op_b, C& c, float alpha, float beta) {
  if (beta == 0.0f) {
    c.noalias() = alpha * (op_a * op_b);
    return;
  }
  if (beta != 1.0f) c *= beta;
  c.noalias() += alpha * (op_a * op_b);
}

void gemm_eigen(const float* a, const float* b, float* c, int m, int n, int k, bool trans_a,
                bool trans_b, float alpha, float beta) {
  Eigen::Map<GemmMatrix> c_map(c, m, n);
  // A stored [k, m] when transposed: map it as stored and let Eigen view the transpose.
  Eigen::Map<const GemmMatrix> a_map(a, trans_a ? k : m, trans_a ? m : k);
  Eigen::Map<const GemmMatrix> b_map(b, trans_b ? n : k, trans_b ? k : n);
  if (!trans_a && !trans_b) product_into(a_map, b_map, c_map, alpha, beta);
  if (!trans_a && trans_b) product_into(a_map, b_map.transpose(), c_map, alpha, beta);
  if (trans_a && !trans_b) product_into(a_map.transpose(), b_map, c_map, alpha, beta);
  if (trans_a && trans_b) product_into(a_map.transpose(), b_map.transpose(), c_map, alpha, beta);
}

}  // namespace
}  // namespace twinsim::kernels::cpu
