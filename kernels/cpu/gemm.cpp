#include "kernels/cpu/gemm.hpp"

#include <Eigen/Core>

namespace twinsim::kernels::cpu {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMatrix>;
using Map = Eigen::Map<RowMatrix>;

// op(A) op(B) for one combination of transposes; noalias() lets Eigen write the
// product straight into C without a temporary (Eigen docs, "Aliasing").
template <typename OpA, typename OpB>
void product_into(const OpA& op_a, const OpB& op_b, Map& c, float alpha, float beta) {
  if (beta == 0.0f) {
    c.noalias() = alpha * (op_a * op_b);
    return;
  }
  if (beta != 1.0f) c *= beta;
  c.noalias() += alpha * (op_a * op_b);
}

}  // namespace

void gemm_forward(const float* a, const float* b, float* c, int m, int n, int k, bool trans_a,
                  bool trans_b, float alpha, float beta) {
  Map c_map(c, m, n);
  // A stored [k, m] when transposed: map it as stored and let Eigen view the transpose.
  ConstMap a_map(a, trans_a ? k : m, trans_a ? m : k);
  ConstMap b_map(b, trans_b ? n : k, trans_b ? k : n);
  if (!trans_a && !trans_b) product_into(a_map, b_map, c_map, alpha, beta);
  if (!trans_a && trans_b) product_into(a_map, b_map.transpose(), c_map, alpha, beta);
  if (trans_a && !trans_b) product_into(a_map.transpose(), b_map, c_map, alpha, beta);
  if (trans_a && trans_b) product_into(a_map.transpose(), b_map.transpose(), c_map, alpha, beta);
}

void gemm_backward(const float* a, const float* b, const float* dc, float* da, float* db, int m,
                   int n, int k, bool trans_a, bool trans_b, bool accumulate) {
  float beta = accumulate ? 1.0f : 0.0f;
  // dA = dC op(B)^T: [m, n] x [n, k]; stored as [k, m] = op(B) dC^T when trans_a.
  if (da != nullptr) {
    if (!trans_a) gemm_forward(dc, b, da, m, k, n, false, !trans_b, 1.0f, beta);
    else gemm_forward(b, dc, da, k, m, n, trans_b, true, 1.0f, beta);
  }
  // dB = op(A)^T dC: [k, m] x [m, n]; stored as [n, k] = dC^T op(A) when trans_b.
  if (db != nullptr) {
    if (!trans_b) gemm_forward(a, dc, db, k, n, m, !trans_a, false, 1.0f, beta);
    else gemm_forward(dc, a, db, n, k, m, true, trans_a, 1.0f, beta);
  }
}

}  // namespace twinsim::kernels::cpu
