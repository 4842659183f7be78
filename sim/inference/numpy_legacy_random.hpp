#pragma once
// numpy's legacy random generator (numpy.random.RandomState, what `np.random.seed(s)` then
// `np.random.gamma`/`np.random.randint` draw from), so a request set drawn by a Python benchmark
// script can be drawn again here, the same numbers to the last bit: MT19937 seeded by
// init_genrand (numpy/random/src/mt19937/mt19937.c, mt19937_seed), 53-bit doubles from two
// 32-bit words, and the legacy distributions (numpy/random/src/legacy/legacy-distributions.c).
#include <cstdint>
#include <random>

namespace twinsim {

class NumpyLegacyRandom {
 public:
  explicit NumpyLegacyRandom(std::uint32_t seed) : mt_(seed) {}

  // random_sample(): (a >> 5) x 2^26 + (b >> 6), over 2^53 (legacy_double)
  double uniform();
  // randint(low, high) of one value: the masked rejection of RandomState's 64-bit integers,
  // which draws 32-bit words while the range fits in 32 bits and none when it is one value
  std::int64_t randint(std::int64_t low, std::int64_t high);
  // gamma(shape, scale) (legacy_gamma: Marsaglia & Tsang over the polar method's normals;
  // shape 1 is the exponential -log(1 - u))
  double gamma(double shape, double scale);

 private:
  double standard_exponential();
  double gauss();  // legacy_gauss: the polar method, its second normal kept for the next call
  double standard_gamma(double shape);

  std::mt19937 mt_;  // init_genrand: the same state numpy's mt19937_seed makes from a 32-bit seed
  bool has_gauss_ = false;
  double gauss_ = 0;
};

}  // namespace twinsim
