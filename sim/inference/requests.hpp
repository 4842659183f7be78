#pragma once
// The requests a serving simulation receives: Poisson arrivals (seeded, so a run
// repeats exactly on any machine) or a trace file.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace twinsim {

struct Request {
  double arrival_s = 0;
  std::int64_t prompt_len = 0;
  std::int64_t output_len = 0;  // tokens to generate (>= 1)
  // Prompt tokens whose K,V the prefix cache already holds on arrival (vLLM's automatic
  // prefix caching: whole blocks of a prefix another request computed); 0: none.
  std::int64_t cached_prefix = 0;
  // Disaggregated decode (sim/inference/disaggregated.hpp): the prompt's K,V and the first
  // output token arrive with the request from a prefill replica; only decoding is left.
  bool kv_arrives = false;
};

// Marks a share `hit_rate` of the requests (a seeded draw each, the same run on any
// machine) as finding the first `prefix_tokens` of their prompt in the prefix cache: the
// whole blocks of it, and never the prompt's last token (vLLM recomputes it to sample).
std::vector<Request> with_prefix_cache(std::vector<Request> requests, std::int64_t prefix_tokens, double hit_rate,
                                       std::int64_t block_tokens, std::uint64_t seed);

// A bad trace file: names the file, the line and what is wrong with it.
struct RequestTraceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `count` requests of fixed lengths arriving as a Poisson process of `rate_per_s`:
// exponential gaps -ln(1 - u) / rate, u uniform in [0, 1) from the top 53 bits of
// mt19937_64 (whose output the C++ standard fixes, unlike std::exponential_distribution's).
std::vector<Request> poisson_requests(std::int64_t count, double rate_per_s, std::uint64_t seed,
                                      std::int64_t prompt_len, std::int64_t output_len);

// CSV with a header naming arrival_s, prompt_len and output_len (any order, other
// columns ignored); rows sorted by arrival on return.
std::vector<Request> read_request_trace(const std::string& path);
std::vector<Request> parse_request_trace(const std::string& text, const std::string& origin);

}  // namespace twinsim
