#include "kernels/cpu/gemm_tiled.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/gemm_paths.hpp"

namespace twinsim::kernels::cpu {

namespace {

// The built-in workspace (tests, benchmarks); 64-byte aligned like Eigen's own buffers.
alignas(64) float g_default_workspace[kGemmWorkspaceFloats];
float* g_workspace = nullptr;

// One block of a stored row-major matrix (row length ld): rows [r0, r0 + rows), columns
// [c0, c0 + cols), as contiguous fp32 rows of length cols. A float block that already is
// contiguous (it spans whole rows) is used in place; anything else is copied into scratch,
// 16-bit values widened exactly.
template <class T>
const float* tile_as_float(const T* src, long ld, int r0, int c0, int rows, int cols,
                           float* scratch) {
  if constexpr (std::is_same_v<T, float>)
    if (cols == ld) return src + r0 * ld;
  for (int r = 0; r < rows; ++r) {
    const T* from = src + (r0 + r) * ld + c0;
    float* to = scratch + static_cast<long>(r) * cols;
    if constexpr (std::is_same_v<T, float>) std::memcpy(to, from, sizeof(float) * cols);
    else
      for (int j = 0; j < cols; ++j) to[j] = to_float(from[j]);
  }
  return scratch;
}

// The tile op(X)[i0, i0 + rows) x [p0, p0 + cols) of an operand stored [rows_total, cols_total],
// or [cols_total, rows_total] when transposed. Stays in the stored orientation: the float
// GEMM is told the transpose, and Eigen's packing reads either layout at full speed.
template <class T>
const float* operand_tile(const T* x, int rows_total, int cols_total, bool trans, int i0, int p0,
                          int rows, int cols, float* scratch) {
  if (!trans) return tile_as_float(x, cols_total, i0, p0, rows, cols, scratch);
  return tile_as_float(x, rows_total, p0, i0, cols, rows, scratch);
}

// C[i0.., j0..] = alpha * acc + beta * C_old over one [rows, cols] tile, rounded once to TC.
// beta == 0 never reads C_old (it may be garbage or NaN), as the BLAS specification requires.
template <class TC>
void store_tile(const float* acc, TC* c, int n, int i0, int j0, int rows, int cols, float alpha,
                float beta) {
  for (int i = 0; i < rows; ++i) {
    const float* from = acc + static_cast<long>(i) * cols;
    TC* to = c + static_cast<long>(i0 + i) * n + j0;
    if (beta == 0.0f)
      for (int j = 0; j < cols; ++j) to[j] = from_float<TC>(alpha * from[j]);
    else
      for (int j = 0; j < cols; ++j) to[j] = from_float<TC>(alpha * from[j] + beta * to_float(to[j]));
  }
}

}  // namespace

void set_gemm_workspace(float* workspace) { g_workspace = workspace; }

namespace detail {

float* gemm_workspace() { return g_workspace != nullptr ? g_workspace : g_default_workspace; }

template <class TA, class TB, class TC>
void gemm_tiled(const TA* a, const TB* b, TC* c, int m, int n, int k, bool trans_a, bool trans_b,
                float alpha, float beta) {
  constexpr long kTileFloats = static_cast<long>(kGemmTile) * kGemmTile;
  float* a_scratch = gemm_workspace();
  float* b_scratch = a_scratch + kTileFloats;
  float* acc = b_scratch + kTileFloats;
  // Which tile each scratch holds, so one that is still there is not widened again: with
  // k in one tile (most linear layers), the op(A) tile serves every j0, and with n too, the
  // op(B) tile serves every i0.
  long a_held = -1, b_held = -1;
  const float* at = nullptr;
  const float* bt = nullptr;
  for (int i0 = 0; i0 < m; i0 += kGemmTile) {
    const int mt = std::min(kGemmTile, m - i0);
    for (int j0 = 0; j0 < n; j0 += kGemmTile) {
      const int nt = std::min(kGemmTile, n - j0);
      if (k == 0) std::fill(acc, acc + static_cast<long>(mt) * nt, 0.0f);  // an empty sum
      // acc = sum over k-tiles of op(A) tile x op(B) tile, in fp32 (beta 1 after the first).
      for (int p0 = 0; p0 < k; p0 += kGemmTile) {
        const int kt = std::min(kGemmTile, k - p0);
        if (const long key = static_cast<long>(i0) * k + p0; key != a_held)
          at = operand_tile(a, m, k, trans_a, i0, p0, mt, kt, a_scratch), a_held = key;
        if (const long key = static_cast<long>(p0) * n + j0; key != b_held)
          bt = operand_tile(b, k, n, trans_b, p0, j0, kt, nt, b_scratch), b_held = key;
        gemm_float(at, bt, acc, mt, nt, kt, trans_a, trans_b, 1.0f, p0 == 0 ? 0.0f : 1.0f);
      }
      store_tile(acc, c, n, i0, j0, mt, nt, alpha, beta);
    }
  }
}

#define TWINSIM_GEMM_TILED(TA, TB, TC)                                                    \
  template void gemm_tiled<TA, TB, TC>(const TA*, const TB*, TC*, int, int, int, bool, bool, \
                                       float, float);
TWINSIM_FOR_EACH_GEMM_STORAGE(TWINSIM_GEMM_TILED)
#undef TWINSIM_GEMM_TILED

}  // namespace detail
}  // namespace twinsim::kernels::cpu
