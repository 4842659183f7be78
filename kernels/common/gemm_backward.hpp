#pragma once
// The backward of C = alpha op(A) op(B) + beta C as two forward GEMMs, written once for every
// backend: each backend's gemm_backward (kernels/cpu/gemm.cpp, kernels/cuda/gemm.cpp) and the
// executor's kernel table (exec/runtime/kernel_table.hpp) call this with their own forward
// GEMM, so they agree on layouts. A is [m, k] (stored [k, m] when trans_a), B is [k, n]
// (stored [n, k] when trans_b), C is [m, n].
namespace twinsim::kernels {

// gemm(a, b, c, m, n, k, trans_a, trans_b, alpha, beta) is the backend's forward GEMM;
// da / db may be null (that gradient is not wanted); accumulate adds into them.
template <class T, class Gemm>
void gemm_backward_via(Gemm&& gemm, const T* a, const T* b, const T* dc, T* da, T* db, int m, int n,
                       int k, bool trans_a, bool trans_b, bool accumulate) {
  const float beta = accumulate ? 1.0f : 0.0f;
  // dA = dC op(B)^T: [m, n] x [n, k]; stored as [k, m] = op(B) dC^T when trans_a.
  if (da != nullptr) {
    if (!trans_a) gemm(dc, b, da, m, k, n, false, !trans_b, 1.0f, beta);
    else gemm(b, dc, da, k, m, n, trans_b, true, 1.0f, beta);
  }
  // dB = op(A)^T dC: [k, m] x [m, n]; stored as [n, k] = dC^T op(A) when trans_b.
  if (db != nullptr) {
    if (!trans_b) gemm(a, dc, db, k, n, m, !trans_a, false, 1.0f, beta);
    else gemm(dc, a, db, n, k, m, true, trans_a, 1.0f, beta);
  }
}

}  // namespace twinsim::kernels
