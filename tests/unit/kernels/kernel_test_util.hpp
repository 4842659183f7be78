#pragma once
// Helpers for the kernel tests: random inputs, central finite differences in double,
// and element-wise comparison.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
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

// n values drawn uniformly in [-1, 1] and rounded to the storage type T (float, bf16,
// fp16), which then holds them exactly.
template <class T>
std::vector<T> random_storage(long n, unsigned seed) {
  std::vector<T> v;
  for (float x : random_vector(n, seed)) v.push_back(from_float<T>(x));
  return v;
}

// The values of v as U (float or double): exact for every storage type.
template <class U, class T>
std::vector<U> widen(const std::vector<T>& v) {
  std::vector<U> w;
  for (const T& x : v) w.push_back(to_float(x));
  return w;
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

}  // namespace twinsim::kernels::testing
