#include "sim/inference/bench_trtllm.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "sim/inference/bench_samples.hpp"

namespace twinsim {

TrtllmPercentiles trtllm_percentiles(std::vector<double> values) {
  TrtllmPercentiles p;
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size());
  auto at = [&](double q) { return values[static_cast<std::size_t>(n * q)]; };  // sorted[int(length * q)]
  p.p50 = at(0.50), p.p90 = at(0.90), p.p95 = at(0.95), p.p99 = at(0.99);
  p.minimum = values.front(), p.maximum = values.back();
  double sum = 0;
  for (double v : values) sum += v;
  p.average = sum / n;
  return p;
}

TrtllmBenchMetrics trtllm_bench_metrics(const ServingResult& r, std::int64_t gpus) {
  TrtllmBenchMetrics m;
  const BenchSamples samples = bench_samples(r);
  std::vector<double> latency, ttft, tpot, per_user, gen_tps;
  for (const BenchSample& b : samples.requests) {
    const double n = static_cast<double>(b.output_len), generation_s = b.e2el_s - b.ttft_s;
    latency.push_back(b.e2el_s);
    ttft.push_back(b.ttft_s);
    tpot.push_back(b.output_len > 1 ? generation_s / (n - 1) : 0);     // RequestRecord.intertoken_latency
    per_user.push_back(b.e2el_s > 0 ? n / b.e2el_s : 0);               // output_token_throughput
    gen_tps.push_back(generation_s > 0 ? (n - 1) / generation_s : 0);  // generation_token_throughput
  }
  m.requests = static_cast<std::int64_t>(samples.requests.size());
  m.total_input = samples.total_input;
  m.total_output = samples.total_output;
  m.gpus = gpus;
  m.total_latency_s = samples.duration_s;
  if (m.total_latency_s > 0) {
    m.request_throughput = static_cast<double>(m.requests) / m.total_latency_s;
    m.output_throughput = static_cast<double>(m.total_output) / m.total_latency_s;
    m.total_token_throughput = static_cast<double>(m.total_input + m.total_output) / m.total_latency_s;
  }
  m.concurrent_requests = mean_requests_in_flight(samples);
  m.latency_s = trtllm_percentiles(latency);
  m.ttft_s = trtllm_percentiles(ttft);
  m.tpot_s = trtllm_percentiles(tpot);
  m.output_per_user = trtllm_percentiles(per_user);
  m.gen_tps = trtllm_percentiles(gen_tps);
  return m;
}

namespace {

// "[TAG] KEY    : value" lines ("{key.upper():<7}: {v:.4f}"), `scale` applied: minimum,
// maximum, average, P50-P99 as the streaming breakdowns list them (`stats_order`), else in
// PercentileStats' field order, as the request latency's dict gives them
void breakdown(std::ostream& out, const char* tag, const TrtllmPercentiles& p, double scale, bool stats_order) {
  const std::pair<const char*, double> by_stats[] = {
      {"MINIMUM", p.minimum}, {"MAXIMUM", p.maximum}, {"AVERAGE", p.average}, {"P50", p.p50},
      {"P90", p.p90},         {"P95", p.p95},         {"P99", p.p99}};
  const std::pair<const char*, double> by_fields[] = {
      {"P50", p.p50},         {"P90", p.p90},         {"P95", p.p95},        {"P99", p.p99},
      {"MINIMUM", p.minimum}, {"MAXIMUM", p.maximum}, {"AVERAGE", p.average}};
  char buf[128];
  for (const auto& [key, value] : stats_order ? by_stats : by_fields) {
    std::snprintf(buf, sizeof buf, "[%s] %-7s: %.4f\n", tag, key, scale * value);
    out << buf;
  }
}

void header(std::ostream& out, const char* title) {
  const std::string rule(59, '=');
  out << rule << "\n= " << title << " \n" << rule << "\n";
}

}  // namespace

void print_trtllm_bench(std::ostream& out, const TrtllmBenchMetrics& m) {
  char buf[160];
  auto line = [&](const char* format, const char* label, double value) {
    std::snprintf(buf, sizeof buf, format, label, value);
    out << buf;
  };
  const double requests = m.requests > 0 ? static_cast<double>(m.requests) : 1;
  header(out, "REQUEST DETAILS");
  out << "Number of requests:             " << m.requests << "\n";
  line("%-32s%.4f\n", "Number of concurrent requests:", m.concurrent_requests);
  line("%-32s%.4f\n", "Average Input Length (tokens):", static_cast<double>(m.total_input) / requests);
  line("%-32s%.4f\n", "Average Output Length (tokens):", static_cast<double>(m.total_output) / requests);
  header(out, "PERFORMANCE OVERVIEW");
  const char* row = "%-50s%.4f\n";
  line(row, "Request Throughput (req/sec):", m.request_throughput);
  line(row, "Total Output Throughput (tokens/sec):", m.output_throughput);
  line(row, "Total Token Throughput (tokens/sec):", m.total_token_throughput);
  line(row, "Total Latency (ms):", 1e3 * m.total_latency_s);
  line(row, "Average request latency (ms):", 1e3 * m.latency_s.average);
  line(row, "Per User Output Throughput [w/ ctx] (tps/user):", m.output_per_user.average);
  line(row, "Per GPU Output Throughput (tps/gpu):", m.output_throughput / static_cast<double>(m.gpus));
  line(row, "Average time-to-first-token [TTFT] (ms):", 1e3 * m.ttft_s.average);
  line(row, "Average time-per-output-token [TPOT] (ms):", 1e3 * m.tpot_s.average);
  line(row, "Per User Output Speed (tps/user):", m.gen_tps.average);
  out << "\n-- Per-Request Time-per-Output-Token [TPOT] Breakdown (ms)\n\n";
  breakdown(out, "TPOT", m.tpot_s, 1e3, true);
  out << "\n-- Per-Request Time-to-First-Token [TTFT] Breakdown (ms) \n\n";
  breakdown(out, "TTFT", m.ttft_s, 1e3, true);
  out << "\n-- Per-Request Generation Throughput [GTPS] Breakdown (tps/user)\n\n";
  breakdown(out, "GTPS", m.gen_tps, 1, true);
  out << "\n-- Request Latency Breakdown (ms) -----------------------\n\n";
  breakdown(out, "Latency", m.latency_s, 1e3, false);
}

nlohmann::json to_json(const TrtllmBenchMetrics& m) {
  auto stats = [](const TrtllmPercentiles& p, double scale) {
    return nlohmann::json{{"p50", scale * p.p50},        {"p90", scale * p.p90},         {"p95", scale * p.p95},
                          {"p99", scale * p.p99},        {"minimum", scale * p.minimum}, {"maximum", scale * p.maximum},
                          {"average", scale * p.average}};
  };
  const double requests = m.requests > 0 ? static_cast<double>(m.requests) : 1;
  return {{"definitions",
           "trtllm-bench throughput --streaming (tensorrt_llm/bench/dataclasses statistics.py, reporting.py)"},
          {"request_info",
           {{"num_requests", m.requests},
            {"avg_num_concurrent_requests", m.concurrent_requests},
            {"avg_input_length", static_cast<double>(m.total_input) / requests},
            {"avg_output_length", static_cast<double>(m.total_output) / requests}}},
          {"performance",
           {{"total_latency_ms", 1e3 * m.total_latency_s},
            {"avg_request_latency_ms", 1e3 * m.latency_s.average},
            {"request_throughput_req_s", m.request_throughput},
            {"system_output_throughput_tok_s", m.output_throughput},
            {"system_total_throughput_tok_s", m.total_token_throughput},
            {"output_throughput_per_user_tok_s", m.output_per_user.average},
            {"output_throughput_per_gpu_tok_s", m.output_throughput / static_cast<double>(m.gpus)},
            {"request_latency_percentiles_ms", stats(m.latency_s, 1e3)}}},
          {"streaming_metrics",
           {{"token_output_speed_tok_s", m.gen_tps.average},
            {"avg_ttft_ms", 1e3 * m.ttft_s.average},
            {"avg_tpot_ms", 1e3 * m.tpot_s.average},
            {"tpot_percentiles", stats(m.tpot_s, 1e3)},
            {"ttft_percentiles", stats(m.ttft_s, 1e3)},
            {"gen_tps_percentiles", stats(m.gen_tps, 1)}}}};
}

}  // namespace twinsim
