#pragma once
// The mixed-precision GEMM behind gemm_forward whenever an operand is 16-bit, private to
// kernels/cpu. Eigen only multiplies float by float, so the product is cut into tiles of
// op(A) [kGemmTile, kGemmTile] x op(B) [kGemmTile, kGemmTile]; each tile is widened into fp32
// scratch (exactly: bf16 and fp16 are subsets of fp32), the float GEMM accumulates the
// k-tiles into an fp32 tile of C, and the tile is stored as alpha * acc + beta * C_old
// rounded once to C's type: the compute-in-fp32, round-on-store contract of cuBLAS's
// CUBLAS_COMPUTE_32F with 16-bit A/B/C (cuBLAS docs, cublasGemmEx). The three tiles live in
// the workspace of set_gemm_workspace, whose size is fixed by kGemmTile alone.
#include "kernels/cpu/gemm.hpp"

namespace twinsim::kernels::cpu::detail {

// 256: a 256 x 256 fp32 tile (256 KiB) is big enough that Eigen runs its blocked kernel
// at full speed and the widening (O(tile^2) per O(tile^3) of math) costs a few percent.
inline constexpr int kGemmTile = 256;
static_assert(3 * static_cast<std::size_t>(kGemmTile) * kGemmTile <= kGemmWorkspaceFloats,
              "the A, B and C tiles must fit the workspace");

// X(TA, TB, TC) for each of the 27 storage combinations of A, B and C (the explicit
// instantiations of gemm_forward and gemm_tiled).
#define TWINSIM_GEMM_STORAGE_C(X, TA, TB) X(TA, TB, float) X(TA, TB, bf16) X(TA, TB, fp16)
#define TWINSIM_GEMM_STORAGE_BC(X, TA) \
  TWINSIM_GEMM_STORAGE_C(X, TA, float) TWINSIM_GEMM_STORAGE_C(X, TA, bf16) TWINSIM_GEMM_STORAGE_C(X, TA, fp16)
#define TWINSIM_FOR_EACH_GEMM_STORAGE(X) \
  TWINSIM_GEMM_STORAGE_BC(X, float) TWINSIM_GEMM_STORAGE_BC(X, bf16) TWINSIM_GEMM_STORAGE_BC(X, fp16)

// Same semantics as gemm_forward; instantiated for all 27 type combinations.
template <class TA, class TB, class TC>
void gemm_tiled(const TA* a, const TB* b, TC* c, int m, int n, int k, bool trans_a, bool trans_b,
                float alpha, float beta);

// The workspace set_gemm_workspace installed, or the built-in static one.
float* gemm_workspace();

}  // namespace twinsim::kernels::cpu::detail
