#include "kernels/cpu/gemm.hpp"

#include <cstdlib>
#include <string_view>
#include <type_traits>

#include "kernels/common/gemm_backward.hpp"
#include "kernels/cpu/gemm_eigen.hpp"
#include "kernels/cpu/gemm_paths.hpp"
#include "kernels/cpu/gemm_tiled.hpp"

namespace twinsim::kernels::cpu {

namespace detail {

namespace {
bool portable_gemm_requested() {
  const char* choice = std::getenv("TWINSIM_GEMM");
  return choice != nullptr && std::string_view(choice) == "portable";
}
}  // namespace

void gemm_portable(const float* a, const float* b, float* c, int m, int n, int k, bool trans_a,
                   bool trans_b, float alpha, float beta) {
  gemm_eigen(a, b, c, m, n, k, trans_a, trans_b, alpha, beta);
}

bool cpu_has_avx2_fma() {
#ifdef TWINSIM_GEMM_AVX2
  // libgcc's cpuid check, which also requires the OS to save the AVX registers (XCR0).
  // TWINSIM_GEMM=portable takes the portable body on any CPU, as a CPU without AVX2 would:
  // scripts/test_portable_gemm.sh runs the kernel tests so, with no second build.
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          !portable_gemm_requested();
  return has;
#else
  return false;
#endif
}

}  // namespace detail

const char* gemm_backend() {
  return detail::cpu_has_avx2_fma() ? "eigen-avx2-fma" : "eigen-portable";
}

namespace detail {

void gemm_float(const float* a, const float* b, float* c, int m, int n, int k, bool trans_a,
                bool trans_b, float alpha, float beta) {
#ifdef TWINSIM_GEMM_AVX2
  if (cpu_has_avx2_fma()) {
    gemm_avx2(a, b, c, m, n, k, trans_a, trans_b, alpha, beta);
    return;
  }
#endif
  gemm_portable(a, b, c, m, n, k, trans_a, trans_b, alpha, beta);
}

}  // namespace detail

template <class TA, class TB, class TC>
void gemm_forward(const TA* a, const TB* b, TC* c, int m, int n, int k, bool trans_a, bool trans_b,
                  float alpha, float beta) {
  // All-float stays one Eigen product on the whole matrices, as before the 16-bit path.
  if constexpr (std::is_same_v<TA, float> && std::is_same_v<TB, float> && std::is_same_v<TC, float>)
    detail::gemm_float(a, b, c, m, n, k, trans_a, trans_b, alpha, beta);
  else
    detail::gemm_tiled(a, b, c, m, n, k, trans_a, trans_b, alpha, beta);
}

#define TWINSIM_GEMM_FORWARD(TA, TB, TC)                                                    \
  template void gemm_forward<TA, TB, TC>(const TA*, const TB*, TC*, int, int, int, bool, bool, \
                                         float, float);
TWINSIM_FOR_EACH_GEMM_STORAGE(TWINSIM_GEMM_FORWARD)
#undef TWINSIM_GEMM_FORWARD

void gemm_backward(const float* a, const float* b, const float* dc, float* da, float* db, int m,
                   int n, int k, bool trans_a, bool trans_b, bool accumulate) {
  const auto forward = [](const float* x, const float* y, float* z, int rows, int cols, int inner, bool tx,
                          bool ty, float alpha, float beta) {
    gemm_forward(x, y, z, rows, cols, inner, tx, ty, alpha, beta);
  };
  gemm_backward_via(forward, a, b, dc, da, db, m, n, k, trans_a, trans_b, accumulate);  // kernels/common/gemm_backward.hpp
}

}  // namespace twinsim::kernels::cpu
