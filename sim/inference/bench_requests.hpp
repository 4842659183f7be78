#pragma once
// Request sets as the engines' own benchmark scripts draw them (vLLM's `vllm bench serve`
// and `benchmark_serving.py`, SGLang's `bench_serving`): random lengths around a mean and
// gamma-distributed gaps between arrivals, seeded so a run repeats on any machine.
#include <cstdint>
#include <vector>

#include "sim/inference/requests.hpp"

namespace twinsim {

struct BenchRequestSpec {
  std::int64_t count = 1000;
  // Mean arrivals per second; infinity: every request at t = 0 (the offline benchmarks,
  // `vllm bench throughput`, `trtllm-bench throughput`, `--request-rate inf`).
  double rate_per_s = 1.0;
  // vLLM's --burstiness: gaps are gamma(shape = burstiness, scale = 1 / (rate x burstiness)),
  // so the mean rate stays `rate_per_s`; 1 is a Poisson process, below 1 burstier
  // (vllm/benchmarks/serve.py, get_request).
  double burstiness = 1.0;
  std::int64_t prompt_len = 0, output_len = 0;
  // vLLM's --random-range-ratio (random dataset): each length uniform over the integers of
  // [len x (1 - r), len x (1 + r)]; 0: every request the same (SGLang's --random-range-ratio
  // draws from [len x r, len] instead: give the mean and the half-width as vLLM does).
  double range_ratio = 0;
  std::uint64_t seed = 0;
  // > 0: the request set vLLM's benchmarks/benchmark_serving.py of 2025 (v0.7-v0.8, the script
  // simon-mo/R1-Benchmark ran for both engines) draws with --dataset-name random and --seed:
  // np.random.seed(seed), then the random dataset's randint draws (its prefix of
  // --random-prefix-len tokens, 0 by default: no draw; input and output lengths, one value each at
  // its default range ratio; each prompt's offset over the tokenizer's vocab_size,
  // this figure: 128000 for Llama 3, 151643 for Qwen 2.5), then get_request's
  // np.random.gamma(burstiness, 1 / (rate x burstiness)) after each request, the first sent at
  // t = 0. Fixed lengths only (range ratio 0). 0: this project's own draws.
  std::int64_t numpy_tokenizer_vocab = 0;
  // > 0 (with numpy_tokenizer_vocab): each prompt's length as the server tokenizes it. That script
  // sends the random ids decoded to text and the server encodes the text again, which gives
  // more tokens than it drew (vllm-project/vllm PR #17408; scripts/random_prompt_server_tokens.py
  // prints the mean by tokenizer and length). 0: prompt_len.
  std::int64_t server_prompt_len = 0;
};

// With burstiness 1, range ratio 0 and no numpy vocabulary the same requests as
// poisson_requests (same seed).
// Gamma draws by Marsaglia & Tsang 2000 ("A simple method for generating gamma variables")
// with Box-Muller normals, shape < 1 as gamma(shape + 1) x u^(1/shape), from mt19937_64's
// 53-bit uniforms: fixed arithmetic, unlike std::gamma_distribution's.
std::vector<Request> bench_requests(const BenchRequestSpec& spec);

}  // namespace twinsim
