#include "sim/inference/serving_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace twinsim {

double latency_percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = q / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (rank - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

LatencyStats latency_stats(const std::vector<double>& values) {
  LatencyStats s;
  if (values.empty()) return s;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean_s = sum / static_cast<double>(values.size());
  s.p50_s = latency_percentile(values, 50);
  s.p90_s = latency_percentile(values, 90);
  s.p99_s = latency_percentile(values, 99);
  return s;
}

ServingSummary summarize(const ServingResult& r) {
  ServingSummary s;
  s.requests = static_cast<std::int64_t>(r.requests.size());
  s.passes = r.passes;
  if (r.requests.empty()) return s;
  std::vector<double> ttft, tpot, e2e;
  double first_arrival = r.requests.front().arrival_s, last_finish = 0, tokens = 0;
  for (std::size_t i = 0; i < r.requests.size(); ++i) {
    const Request& q = r.requests[i];
    const RequestTimes& t = r.times[i];
    s.prompt_tokens += q.prompt_len;
    s.cached_prompt_tokens += q.cached_prefix;
    first_arrival = std::min(first_arrival, q.arrival_s);
    last_finish = std::max(last_finish, t.finish_s);
    tokens += static_cast<double>(q.output_len);
    ttft.push_back(t.first_token_s - q.arrival_s);
    e2e.push_back(t.finish_s - q.arrival_s);
    if (q.output_len > 1) tpot.push_back((t.finish_s - t.first_token_s) / static_cast<double>(q.output_len - 1));
    s.preemptions += t.preemptions;
  }
  s.ttft = latency_stats(ttft);
  s.tpot = latency_stats(tpot);
  s.e2e = latency_stats(e2e);
  s.duration_s = last_finish - first_arrival;
  if (s.duration_s > 0) {
    s.output_tokens_per_s = tokens / s.duration_s;
    s.requests_per_s = static_cast<double>(s.requests) / s.duration_s;
  }
  // occupancy holds from one pass start to the next (the last one to the end)
  const OccupancySummary& o = r.occupancy_summary;
  if (r.passes > 0 && r.total_blocks > 0) {
    const double used_block_seconds =
        o.used_block_seconds + static_cast<double>(o.last_used_blocks) * std::max(0.0, last_finish - o.last_pass_s);
    const double span = last_finish - o.first_pass_s;
    const double total = static_cast<double>(r.total_blocks);
    s.mean_kv_occupancy = span > 0 ? used_block_seconds / total / span : 0;
    s.peak_kv_occupancy = static_cast<double>(o.peak_used_blocks) / total;
  }
  return s;
}

namespace {

nlohmann::json stats_json(const LatencyStats& s) {
  return {{"mean_s", s.mean_s}, {"p50_s", s.p50_s}, {"p90_s", s.p90_s}, {"p99_s", s.p99_s}};
}

}  // namespace

nlohmann::json to_json(const ServingSummary& s, const ServingResult& r) {
  nlohmann::json j = {{"requests", s.requests},
          {"duration_s", s.duration_s},
          {"ttft", stats_json(s.ttft)},
          {"tpot", stats_json(s.tpot)},
          {"e2e", stats_json(s.e2e)},
          {"output_tokens_per_s", s.output_tokens_per_s},
          {"requests_per_s", s.requests_per_s},
          {"kv_cache", {{"blocks", r.total_blocks},
                        {"block_tokens", r.block_tokens},
                        {"mean_occupancy", s.mean_kv_occupancy},
                        {"peak_occupancy", s.peak_kv_occupancy},
                        {"swapped_out_blocks", r.swapped_out_blocks},
                        {"swapped_in_blocks", r.swapped_in_blocks}}},
          {"preemptions", s.preemptions},
          {"passes", s.passes},
          {"prompt_tokens", s.prompt_tokens},
          {"cached_prompt_tokens", s.cached_prompt_tokens}};
  if (r.verify_steps > 0)  // speculative decoding: what the acceptance draws gave
    j["speculative"] = {{"verify_steps", r.verify_steps},
                        {"tokens_per_step", static_cast<double>(r.verified_tokens) / static_cast<double>(r.verify_steps)}};
  return j;
}

void write_occupancy_csv(std::ostream& out, const ServingResult& r) {
  out << "time_s,used_blocks,total_blocks,occupancy,running,waiting\n";
  char line[160];
  for (const OccupancySample& o : r.occupancy) {
    const double share = r.total_blocks > 0 ? static_cast<double>(o.used_blocks) / r.total_blocks : 0;
    std::snprintf(line, sizeof line, "%.6f,%lld,%lld,%.4f,%lld,%lld\n", o.time_s, static_cast<long long>(o.used_blocks),
                  static_cast<long long>(r.total_blocks), share, static_cast<long long>(o.running),
                  static_cast<long long>(o.waiting));
    out << line;
  }
}

void write_requests_csv(std::ostream& out, const ServingResult& r) {
  out << "request,arrival_s,prompt_len,output_len,first_token_s,finish_s,ttft_s,preemptions\n";
  char line[200];
  for (std::size_t i = 0; i < r.requests.size() && i < r.times.size(); ++i) {
    const Request& q = r.requests[i];
    const RequestTimes& t = r.times[i];
    std::snprintf(line, sizeof line, "%zu,%.6f,%lld,%lld,%.6f,%.6f,%.6f,%d\n", i, q.arrival_s,
                  static_cast<long long>(q.prompt_len), static_cast<long long>(q.output_len), t.first_token_s,
                  t.finish_s, t.first_token_s - q.arrival_s, t.preemptions);  // TTFT: first token - arrival
    out << line;
  }
}

void print_serving(std::ostream& out, const ServingSummary& s, const ServingResult& r) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "served %lld requests in %.2f s (%lld passes, %lld preemptions)\n",
                static_cast<long long>(s.requests), s.duration_s, static_cast<long long>(s.passes),
                static_cast<long long>(s.preemptions));
  out << buf;
  out << "                 mean       p50       p90       p99   (ms)\n";
  auto line = [&](const char* name, const LatencyStats& l) {
    std::snprintf(buf, sizeof buf, "  %-8s %9.2f %9.2f %9.2f %9.2f\n", name, 1e3 * l.mean_s, 1e3 * l.p50_s,
                  1e3 * l.p90_s, 1e3 * l.p99_s);
    out << buf;
  };
  line("TTFT", s.ttft);
  line("TPOT", s.tpot);
  line("E2E", s.e2e);
  std::snprintf(buf, sizeof buf, "throughput       %.1f output tokens/s, %.3f requests/s\n", s.output_tokens_per_s,
                s.requests_per_s);
  out << buf;
  std::snprintf(buf, sizeof buf, "KV cache         %lld blocks of %lld tokens; occupancy mean %.1f%%, peak %.1f%%\n",
                static_cast<long long>(r.total_blocks), static_cast<long long>(r.block_tokens),
                100 * s.mean_kv_occupancy, 100 * s.peak_kv_occupancy);
  out << buf;
  if (r.verify_steps > 0)
    out << "speculative      " << r.verify_steps << " verify steps, "
        << static_cast<double>(r.verified_tokens) / static_cast<double>(r.verify_steps) << " tokens each\n";
  if (r.swapped_out_blocks > 0)
    out << "swapped          " << r.swapped_out_blocks << " blocks to the host, " << r.swapped_in_blocks
        << " back (swap preemption)\n";
  if (s.cached_prompt_tokens > 0) {
    std::snprintf(buf, sizeof buf, "prefix cache     %lld of %lld prompt tokens found cached (%.1f%%)\n",
                  static_cast<long long>(s.cached_prompt_tokens), static_cast<long long>(s.prompt_tokens),
                  100.0 * static_cast<double>(s.cached_prompt_tokens) / static_cast<double>(s.prompt_tokens));
    out << buf;
  }
}

}  // namespace twinsim
