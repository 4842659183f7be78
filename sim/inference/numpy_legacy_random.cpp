#include "sim/inference/numpy_legacy_random.hpp"

#include <cmath>
#include <stdexcept>

namespace twinsim {

double NumpyLegacyRandom::uniform() {
  const std::uint32_t a = mt_() >> 5, b = mt_() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

std::int64_t NumpyLegacyRandom::randint(std::int64_t low, std::int64_t high) {
  if (high <= low) throw std::invalid_argument("randint: high must exceed low");
  const std::uint64_t range = static_cast<std::uint64_t>(high - low - 1);
  if (range == 0) return low;  // one value: numpy draws nothing
  if (range > 0xFFFFFFFFULL) throw std::invalid_argument("randint: ranges over 2^32 are not drawn here");
  std::uint32_t mask = static_cast<std::uint32_t>(range);  // the smallest all-ones mask >= range
  for (int shift = 1; shift <= 16; shift *= 2) mask |= mask >> shift;
  for (;;) {
    const std::uint32_t v = static_cast<std::uint32_t>(mt_()) & mask;
    if (v <= range) return low + static_cast<std::int64_t>(v);
  }
}

double NumpyLegacyRandom::standard_exponential() { return -std::log(1.0 - uniform()); }

double NumpyLegacyRandom::gauss() {
  if (has_gauss_) {
    has_gauss_ = false;
    return gauss_;
  }
  double x1 = 0, x2 = 0, r2 = 0;
  do {
    x1 = 2.0 * uniform() - 1.0;
    x2 = 2.0 * uniform() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

double NumpyLegacyRandom::standard_gamma(double shape) {
  if (shape == 1.0) return standard_exponential();
  if (shape == 0.0) return 0.0;
  if (shape < 1.0) {
    for (;;) {  // Johnk's and Ahrens & Dieter's rejection, as numpy's legacy draws it
      const double u = uniform(), v = standard_exponential();
      if (u <= 1.0 - shape) {
        const double x = std::pow(u, 1. / shape);
        if (x <= v) return x;
      } else {
        const double y = -std::log((1 - u) / shape);
        const double x = std::pow(1.0 - shape + shape * y, 1. / shape);
        if (x <= v + y) return x;
      }
    }
  }
  const double b = shape - 1. / 3., c = 1. / std::sqrt(9 * b);  // Marsaglia & Tsang 2000
  for (;;) {
    double x = 0, v = 0;
    do {
      x = gauss();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = uniform();
    if (u < 1.0 - 0.0331 * (x * x) * (x * x)) return b * v;
    if (std::log(u) < 0.5 * x * x + b * (1. - v + std::log(v))) return b * v;
  }
}

double NumpyLegacyRandom::gamma(double shape, double scale) { return scale * standard_gamma(shape); }

}  // namespace twinsim
