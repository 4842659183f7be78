#include "hardware/clock_spread.hpp"

#include <cmath>

namespace twinsim {

double expected_max_standard_normal(std::int64_t n) {
  if (n <= 1) return 0;
  const double count = static_cast<double>(n);
  // the density of the largest draw, n phi(x) Phi(x)^(n-1), in logs so that n of 10^7 stays finite
  const auto integrand = [count](double x) {
    const double log_cdf = std::log(0.5 * std::erfc(-x / std::sqrt(2.0)));
    const double log_pdf = -0.5 * x * x - 0.5 * std::log(2 * M_PI);
    return x * std::exp(std::log(count) + log_pdf + (count - 1) * log_cdf);
  };
  // the largest of up to 10^9 draws lies within [-8, 9] but for a negligible tail
  constexpr double kLow = -8, kHigh = 9;
  constexpr int kIntervals = 17000;  // even, for Simpson's rule; step 0.001
  const double h = (kHigh - kLow) / kIntervals;
  double sum = integrand(kLow) + integrand(kHigh);
  for (int i = 1; i < kIntervals; ++i) sum += (i % 2 ? 4 : 2) * integrand(kLow + i * h);
  return sum * h / 3;
}

double slowest_member_lag(double spread, std::int64_t n) {
  return 1 / (1 - spread * expected_max_standard_normal(n)) - 1;
}

}  // namespace twinsim
