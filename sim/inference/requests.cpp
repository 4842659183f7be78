#include "sim/inference/requests.hpp"

#include "sim/common/csv.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

namespace twinsim {

std::vector<Request> poisson_requests(std::int64_t count, double rate_per_s, std::uint64_t seed,
                                      std::int64_t prompt_len, std::int64_t output_len) {
  if (count < 0) throw std::invalid_argument("requests: count " + std::to_string(count) + " must be >= 0");
  if (!(rate_per_s > 0)) throw std::invalid_argument("requests: rate " + std::to_string(rate_per_s) + " must be > 0");
  std::mt19937_64 rng(seed);
  std::vector<Request> out;
  out.reserve(static_cast<std::size_t>(count));
  double t = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    t += -std::log1p(-u) / rate_per_s;  // inverse CDF of the exponential distribution
    if (!std::isfinite(t))
      throw std::invalid_argument("requests: at rate " + std::to_string(rate_per_s) + " per s, arrival " +
                                  std::to_string(i) + " lies past the largest time a double holds");
    out.push_back({t, prompt_len, output_len});
  }
  return out;
}

std::vector<Request> with_prefix_cache(std::vector<Request> requests, std::int64_t prefix_tokens, double hit_rate,
                                       std::int64_t block_tokens, std::uint64_t seed) {
  if (prefix_tokens < 0) throw std::invalid_argument("prefix cache: prefix tokens must be >= 0");
  if (!(hit_rate >= 0 && hit_rate <= 1)) throw std::invalid_argument("prefix cache: hit rate must be in [0, 1]");
  if (block_tokens < 1) throw std::invalid_argument("prefix cache: block tokens must be >= 1");
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);  // a stream apart from the arrivals'
  for (Request& r : requests) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    if (u >= hit_rate) continue;
    const std::int64_t cacheable = std::min(prefix_tokens, r.prompt_len - 1);  // the last one is recomputed
    r.cached_prefix = cacheable / block_tokens * block_tokens;                 // whole blocks only
  }
  return requests;
}

namespace {

double number(const std::string& cell, const std::string& where, const std::string& column) {
  const std::optional<double> v = parse_number(cell);
  if (!v) throw RequestTraceError(where + ": " + column + "='" + cell + "' is not a number");
  return *v;
}


}  // namespace

std::vector<Request> parse_request_trace(const std::string& text, const std::string& origin) {
  std::stringstream in(text);
  std::string line;
  int line_no = 0;
  int col[3] = {-1, -1, -1};
  const char* names[3] = {"arrival_s", "prompt_len", "output_len"};
  std::vector<Request> out;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[0] == '#') continue;
    const std::vector<std::string> cells = split_csv_line(line);
    const std::string where = origin + ":" + std::to_string(line_no);
    if (col[0] < 0) {  // the header
      for (int c = 0; c < static_cast<int>(cells.size()); ++c)
        for (int k = 0; k < 3; ++k)
          if (cells[c] == names[k]) col[k] = c;
      for (int k = 0; k < 3; ++k)
        if (col[k] < 0) throw RequestTraceError(where + ": header has no column '" + names[k] + "'");
      continue;
    }
    double v[3];
    for (int k = 0; k < 3; ++k) {
      if (col[k] >= static_cast<int>(cells.size()))
        throw RequestTraceError(where + ": missing column '" + names[k] + "'");
      v[k] = number(cells[col[k]], where, names[k]);
    }
    if (v[0] < 0) throw RequestTraceError(where + ": arrival_s=" + cells[col[0]] + " must be >= 0");
    // a token count as a scenario's inference keys allow it (2^40): converted to an integer,
    // a larger double would be undefined behaviour (found by tests/fuzz/fuzz_csv.cpp)
    constexpr double kMaxTokens = 1099511627776.0;
    for (int k = 1; k < 3; ++k)
      if (v[k] < 1 || v[k] > kMaxTokens || v[k] != std::floor(v[k]))
        throw RequestTraceError(where + ": " + names[k] + "=" + cells[col[k]] +
                                " must be a whole number from 1 to 1099511627776 (2^40)");
    out.push_back({v[0], static_cast<std::int64_t>(v[1]), static_cast<std::int64_t>(v[2])});
  }
  if (col[0] < 0) throw RequestTraceError(origin + ": empty trace (no header arrival_s,prompt_len,output_len)");
  std::stable_sort(out.begin(), out.end(), [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; });
  return out;
}

std::vector<Request> read_request_trace(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw RequestTraceError(path + ": cannot open the request trace");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_request_trace(ss.str(), path);
}

}  // namespace twinsim
