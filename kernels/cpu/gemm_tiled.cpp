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

// Selects a where mask is all ones, b where it is zero: a ?: GCC would not vectorise.
inline std::uint32_t select(std::uint32_t mask, std::uint32_t a, std::uint32_t b) {
  return (a & mask) | (b & ~mask);
}
inline std::uint32_t mask_of(bool x) { return 0u - static_cast<std::uint32_t>(x); }

// widen / narrow: bit-identical to storage.hpp's to_float and from_float (gemm_test checks
// every 16-bit pattern and a sweep of fp32 ones), written without branches so GCC
// vectorises the tile loops; the branchy originals ran one element at a time and made
// fp16 GEMMs about twice as slow as bf16 ones.
inline float widen(float x) { return x; }
inline float widen(bf16 x) { return to_float(x); }  // a shift: already branch-free
inline float widen(fp16 x) {
  const std::uint32_t h = x.bits, exp = h & 0x7c00u;
  const std::uint32_t body = (h & 0x7fffu) << 13;  // exponent and mantissa in fp32's places
  const std::uint32_t normal = body + (112u << 23);  // rebias 15 -> 127
  const std::uint32_t special = body | 0x7f800000u;  // inf, nan with its payload
  // subnormal mant * 2^-24 = (2^-14 + mant * 2^-24) - 2^-14, both exact fp32 normals, so
  // a denormals-are-zero FPU mode cannot flush it
  const std::uint32_t subnormal = float_bits(bits_float(body + (113u << 23)) - 0x1p-14f);
  std::uint32_t magnitude = select(mask_of(exp == 0), subnormal, normal);
  magnitude = select(mask_of(exp == 0x7c00u), special, magnitude);
  return bits_float(magnitude | ((h & 0x8000u) << 16));
}

template <class T>
T narrow(float x) {
  return from_float<T>(x);
}
template <>
bf16 narrow<bf16>(float x) {
  // round to nearest even on the dropped 16 bits; inf passes, a nan stays a nan
  const std::uint32_t u = float_bits(x);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t special = (u >> 16) | (mask_of((u & 0xffffu) != 0) & 0x40u);
  return {static_cast<std::uint16_t>(select(mask_of((u & 0x7f800000u) == 0x7f800000u), special, rounded))};
}

template <>
fp16 narrow<fp16>(float x) {
  // F. Giesen's float_to_half_fast3_rtne ("half to float done quic", 2016) with masks
  const std::uint32_t u = float_bits(x), a = u & 0x7fffffffu;
  // normal: round the 13 dropped bits to nearest even, then rebias 127 -> 15
  const std::uint32_t normal = ((a + 0xfffu + ((a >> 13) & 1u)) >> 13) - (112u << 10);
  // below 2^-14: adding 0.5 leaves a multiple of 2^-24 rounded to nearest even (the ulp of
  // [0.5, 1)), whose low mantissa bits are the fp16 subnormal
  const std::uint32_t subnormal = float_bits(bits_float(a) + 0.5f) - 0x3f000000u;
  std::uint32_t h = select(mask_of(a < 0x38800000u), subnormal, normal);
  h = select(mask_of(a >= 0x477ff000u), 0x7c00u, h);  // rounds above 65504: inf
  h = select(mask_of(a > 0x7f800000u), 0x7e00u, h);   // nan
  return {static_cast<std::uint16_t>(h | ((u >> 16) & 0x8000u))};
}

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
      for (int j = 0; j < cols; ++j) to[j] = widen(from[j]);
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
      for (int j = 0; j < cols; ++j) to[j] = narrow<TC>(alpha * from[j]);
    else
      for (int j = 0; j < cols; ++j) to[j] = narrow<TC>(alpha * from[j] + beta * widen(to[j]));
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
