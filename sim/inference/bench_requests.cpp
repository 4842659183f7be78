#include "sim/inference/bench_requests.hpp"

#include "sim/inference/numpy_legacy_random.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string>

namespace twinsim {

namespace {

// 53 random bits as a double in [0, 1) (the same draw poisson_requests makes)
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

double gamma_from(double shape, std::mt19937_64& rng) {
  if (shape < 1) return gamma_from(shape + 1, rng) * std::pow(1 - uniform(rng), 1 / shape);
  const double d = shape - 1.0 / 3.0, c = 1 / std::sqrt(9 * d);
  for (;;) {
    // Box-Muller: one standard normal from two uniforms
    const double z = std::sqrt(-2 * std::log1p(-uniform(rng))) * std::cos(2 * std::numbers::pi * uniform(rng));
    const double v = std::pow(1 + c * z, 3);
    if (v <= 0) continue;
    const double u = 1 - uniform(rng);
    if (std::log(u) < 0.5 * z * z + d - d * v + d * std::log(v)) return d * v;
  }
}

std::int64_t drawn_length(std::int64_t mean, double ratio, std::mt19937_64& rng) {
  if (ratio <= 0) return mean;
  const auto low = std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(mean) * (1 - ratio)));
  const auto high = std::max(low, static_cast<std::int64_t>(static_cast<double>(mean) * (1 + ratio)));
  return low + static_cast<std::int64_t>(uniform(rng) * static_cast<double>(high - low + 1));
}

// benchmark_serving.py's draws (BenchRequestSpec::numpy_tokenizer_vocab): sample_random_requests
// then get_request, in that order on numpy's one global RandomState.
std::vector<Request> numpy_bench_requests(const BenchRequestSpec& spec) {
  if (spec.range_ratio != 0) throw std::invalid_argument("requests: numpy draws take fixed lengths (range ratio 0)");
  if (spec.seed > 0xFFFFFFFFULL) throw std::invalid_argument("requests: numpy's seed must be below 2^32");
  NumpyLegacyRandom rng(static_cast<std::uint32_t>(spec.seed));
  const std::int64_t n = std::max<std::int64_t>(0, spec.count);
  for (std::int64_t i = 0; i < n; ++i) rng.randint(spec.prompt_len, spec.prompt_len + 1);  // input_lens
  for (std::int64_t i = 0; i < n; ++i) rng.randint(spec.output_len, spec.output_len + 1);  // output_lens
  for (std::int64_t i = 0; i < n; ++i) rng.randint(0, spec.numpy_tokenizer_vocab);         // offsets
  std::vector<Request> out;
  out.reserve(static_cast<std::size_t>(n));
  const bool offline = std::isinf(spec.rate_per_s);
  const double scale = 1 / (spec.rate_per_s * spec.burstiness);
  // what the server prefills: the drawn ids re-tokenized (BenchRequestSpec::server_prompt_len)
  const std::int64_t prompt = spec.server_prompt_len > 0 ? spec.server_prompt_len : spec.prompt_len;
  double t = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    out.push_back({t, prompt, spec.output_len});
    if (!offline) t += rng.gamma(spec.burstiness, scale);  // the gap after request i
  }
  return out;
}

}  // namespace

std::vector<Request> bench_requests(const BenchRequestSpec& spec) {
  if (!(spec.burstiness > 0)) throw std::invalid_argument("requests: burstiness must be > 0");
  if (!(spec.range_ratio >= 0 && spec.range_ratio < 1)) throw std::invalid_argument("requests: range ratio must be in [0, 1)");
  if (spec.numpy_tokenizer_vocab < 0) throw std::invalid_argument("requests: numpy tokenizer vocabulary must be >= 0");
  if (spec.server_prompt_len < 0 || (spec.server_prompt_len > 0 && spec.numpy_tokenizer_vocab == 0))
    throw std::invalid_argument("requests: server_prompt_len=" + std::to_string(spec.server_prompt_len) +
                                ": must be >= 0, and > 0 only with the numpy draws (a tokenizer vocabulary)");
  if (spec.numpy_tokenizer_vocab > 0) {
    if (!(spec.rate_per_s > 0)) throw std::invalid_argument("requests: rate must be > 0");
    return numpy_bench_requests(spec);
  }
  const bool offline = std::isinf(spec.rate_per_s);
  if (!offline && spec.burstiness == 1 && spec.range_ratio == 0)
    return poisson_requests(spec.count, spec.rate_per_s, spec.seed, spec.prompt_len, spec.output_len);
  if (!(spec.rate_per_s > 0)) throw std::invalid_argument("requests: rate must be > 0");
  std::mt19937_64 arrivals(spec.seed);
  std::mt19937_64 lengths(spec.seed ^ 0xd1b54a32d192ed03ULL);  // a stream apart from the arrivals'
  std::vector<Request> out;
  out.reserve(static_cast<std::size_t>(std::max<std::int64_t>(0, spec.count)));
  double t = 0;
  const double scale = 1 / (spec.rate_per_s * spec.burstiness);
  for (std::int64_t i = 0; i < spec.count; ++i) {
    if (!offline) t += gamma_from(spec.burstiness, arrivals) * scale;
    const std::int64_t prompt = drawn_length(spec.prompt_len, spec.range_ratio, lengths);
    const std::int64_t output = drawn_length(spec.output_len, spec.range_ratio, lengths);
    out.push_back({t, prompt, output});
  }
  return out;
}

}  // namespace twinsim
