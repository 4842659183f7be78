#pragma once
// Helpers for the kernel tests: random inputs, central finite differences in double,
// and element-wise comparison.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common/storage.hpp"

namespace twinsim::kernels::testing {

inline std::vector<float> random_vector(long n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// n values drawn uniformly in [lo, hi] and rounded to the storage type T (float, bf16,
// fp16), which then holds them exactly.
template <class T>
std::vector<T> random_storage(long n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::vector<T> v;
  for (float x : random_vector(n, seed, lo, hi)) v.push_back(from_float<T>(x));
  return v;
}

// The values of v as U (float or double): exact for every storage type.
template <class U, class T>
std::vector<U> widen(const std::vector<T>& v) {
  std::vector<U> w;
  for (const T& x : v) w.push_back(to_float(x));
  return w;
}

// The [rows, cols] row-major matrix x transposed to [cols, rows].
template <class T>
std::vector<T> transposed(const std::vector<T>& x, int rows, int cols) {
  std::vector<T> t(x.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) t[static_cast<long>(c) * rows + r] = x[static_cast<long>(r) * cols + c];
  return t;
}

inline std::vector<double> to_double(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// Gradient of a scalar function f at x by central differences, (f(x+h) - f(x-h)) / 2h,
// in double so the truncation error O(h^2) and rounding error O(eps/h) are both ~1e-10.
inline std::vector<double> numeric_gradient(const std::function<double(const std::vector<double>&)>& f,
                                            std::vector<double> x, double h = 1e-5) {
  std::vector<double> grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double saved = x[i];
    x[i] = saved + h;
    double up = f(x);
    x[i] = saved - h;
    double down = f(x);
    x[i] = saved;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

// Sum of weights[i] * y[i]: a scalar loss whose gradient w.r.t. y is weights, so the
// finite-difference gradient of it is the vector-Jacobian product a backward computes.
inline double weighted_sum(const std::vector<double>& y, const std::vector<float>& weights) {
  double s = 0.0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * weights[i];
  return s;
}

template <typename A, typename B>
void expect_all_near(const A& actual, const B& expected, double atol, double rtol,
                     const char* what = "") {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < actual.size() && failures < 5; ++i) {
    double tol = atol + rtol * std::abs(static_cast<double>(expected[i]));
    if (std::abs(static_cast<double>(actual[i]) - static_cast<double>(expected[i])) > tol) {
      ADD_FAILURE() << what << "[" << i << "]: " << actual[i] << " vs expected " << expected[i];
      ++failures;
    }
  }
}

// ---- Results accumulated in fp32 and stored once in T (float, bf16, fp16) ----
//
// A kernel that sums K products in fp32 and stores the sum in T is judged against the sum
// taken exactly (in double, on the same stored inputs), never against another fp32 sum:
// two fp32 sums of the same terms in different orders (AVX2 against portable GEMM, whole
// matrices against 256-tiles) can differ by more than a 16-bit ulp where the result is
// small beside its terms. The allowance is the arithmetic's own bound:
//   |stored - exact| <= gamma_K * sum |terms|  +  half the gap of T at the stored value,
// gamma_K = K u / (1 - K u), u = 2^-24: the error of any fp32 evaluation order of a K-term
// sum (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., eq. 3.5), then
// one rounding to T. On inputs of one sign nothing cancels, sum |terms| = |exact|, and the
// first part is K u of the result: far below half a 16-bit ulp (2^-9 of bf16, 2^-12 of
// fp16) while K u << 2^-12, so there a second rounding, or a sum kept in 16 bits, fails.

// gamma_K of fp32 for a sum of `terms` terms.
inline double fp32_gamma(long terms) {
  const double ku = static_cast<double>(terms) * std::ldexp(1.0, -24);
  return ku / (1 - ku);
}

// A 16-bit value's place on the number line as an integer (sign-magnitude to two's
// complement), so neighbouring values differ by 1 and the distance is in ulps; +0 == -0.
template <class T>
int ordered(T v) {
  const int magnitude = v.bits & 0x7fff;
  return (v.bits & 0x8000) ? -magnitude : magnitude;
}
template <class T>
T from_ordered(int key) {
  return {static_cast<std::uint16_t>(key < 0 ? 0x8000 | -key : key)};
}

// x rounded once to T, to nearest with ties to even. Going through float would round twice
// (double -> float -> T), which can land one ulp off; the nearest T is within one ulp of
// that, so pick it among the float-rounded value and its two neighbours.
template <class T>
T round_once(double x) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(x);
  } else {
    const T first = from_float<T>(static_cast<float>(x));
    T best = first;
    double best_err = std::abs(to_float(first) - x);
    for (int step : {-1, 1}) {
      const T other = from_ordered<T>(ordered(first) + step);
      const double err = std::abs(to_float(other) - x);
      if (err < best_err || (err == best_err && (other.bits & 1) == 0)) best = other, best_err = err;
    }
    return best;
  }
}

// Half the gap between v and its farther neighbour in T: the most by which v can be a
// nearest rounding of something. 0 for float, whose rounding the fp32 bound covers.
template <class T>
double half_gap(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return 0.0;
  } else {
    const double x = to_float(v);
    const double up = to_float(from_ordered<T>(ordered(v) + 1)), down = to_float(from_ordered<T>(ordered(v) - 1));
    return std::max(up - x, x - down) / 2;
  }
}

// The exact result of each element and the fp32 allowance of its sum (gamma_K sum |terms|).
struct Fp32Reference {
  std::vector<double> exact, fp32_bound;
};

// P = A B in double (A [m, k], B [k, n] logical, row-major); i-p-j order so it vectorises.
inline std::vector<double> product(const std::vector<double>& a, const std::vector<double>& b, int m, int n,
                                   int k) {
  std::vector<double> p(static_cast<long>(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int q = 0; q < k; ++q) {
      const double aiq = a[static_cast<long>(i) * k + q];
      for (int j = 0; j < n; ++j) p[static_cast<long>(i) * n + j] += aiq * b[static_cast<long>(q) * n + j];
    }
  return p;
}

inline std::vector<double> magnitudes(std::vector<double> x) {
  for (double& v : x) v = std::abs(v);
  return x;
}

// A B + addend (addend may be empty), with the bound of a (k + 1)-term fp32 sum.
inline Fp32Reference product_reference(const std::vector<double>& a, const std::vector<double>& b, int m, int n,
                                       int k, const std::vector<double>& addend = {}) {
  Fp32Reference r{product(a, b, m, n, k), product(magnitudes(a), magnitudes(b), m, n, k)};
  const double gamma = fp32_gamma(k + 1);
  for (size_t i = 0; i < r.exact.size(); ++i) {
    const double add = addend.empty() ? 0.0 : addend[i];
    r.exact[i] += add;
    r.fp32_bound[i] = gamma * (r.fp32_bound[i] + std::abs(add));
  }
  return r;
}

// How a stored result agrees with its reference.
struct BoundCheck {
  long count = 0;
  long outside = 0;        // elements farther from the exact value than the allowance
  long not_nearest = 0;    // elements other than the exact value rounded once (information)
  long worst = -1;         // element with the largest error / allowance
  double worst_ratio = 0;  // that ratio (<= 1 passes)
  bool finite = true;
  bool ok() const { return finite && outside == 0; }
};

template <class T>
BoundCheck check_against_bound(const std::vector<T>& got, const Fp32Reference& ref) {
  BoundCheck c;
  c.count = static_cast<long>(got.size());
  for (long i = 0; i < c.count; ++i) {
    const double value = to_float(got[i]), err = std::abs(value - ref.exact[i]);
    const double allowance = ref.fp32_bound[i] + half_gap(got[i]);
    c.finite = c.finite && std::isfinite(value);
    const double ratio = allowance > 0 ? err / allowance : (err > 0 ? INFINITY : 0.0);
    if (ratio > c.worst_ratio) c.worst_ratio = ratio, c.worst = i;
    c.outside += err > allowance;
    if constexpr (!std::is_same_v<T, float>) c.not_nearest += ordered(got[i]) != ordered(round_once<T>(ref.exact[i]));
  }
  return c;
}

inline std::string describe(const BoundCheck& c) {
  return std::to_string(c.outside) + " of " + std::to_string(c.count) + " outside the fp32 bound + half a gap (" +
         std::to_string(c.not_nearest) + " not the nearest value; worst element " + std::to_string(c.worst) +
         " at " + std::to_string(c.worst_ratio) + " of its allowance)" + (c.finite ? "" : ", non-finite values");
}

template <class T>
void expect_within_bound(const std::vector<T>& got, const Fp32Reference& ref, const std::string& what) {
  ASSERT_EQ(got.size(), ref.exact.size()) << what;
  const BoundCheck c = check_against_bound(got, ref);
  EXPECT_TRUE(c.ok()) << what << ": " << describe(c);
}

}  // namespace twinsim::kernels::testing
