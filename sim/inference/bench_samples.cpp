#include "sim/inference/bench_samples.hpp"

#include <algorithm>

namespace twinsim {

BenchSamples bench_samples(const ServingResult& r) {
  BenchSamples s;
  double first_arrival = r.requests.empty() ? 0 : r.requests.front().arrival_s, last_finish = 0;
  for (std::size_t i = 0; i < r.requests.size(); ++i) {
    const Request& q = r.requests[i];
    const RequestTimes& t = r.times[i];
    if (t.finish_s < 0) continue;  // never finished: not a successful request
    s.requests.push_back({q.prompt_len, q.output_len, t.first_token_s - q.arrival_s, t.finish_s - q.arrival_s});
    s.total_input += q.prompt_len;
    s.total_output += q.output_len;
    first_arrival = std::min(first_arrival, q.arrival_s);
    last_finish = std::max(last_finish, t.finish_s);
  }
  s.duration_s = last_finish - first_arrival;
  return s;
}

double mean_requests_in_flight(const BenchSamples& s) {
  if (!(s.duration_s > 0)) return 0;
  double latencies = 0;  // Little's law: the time requests spent in flight over the time
  for (const BenchSample& b : s.requests) latencies += b.e2el_s;
  return latencies / s.duration_s;
}

}  // namespace twinsim
