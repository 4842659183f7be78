#include "sim/inference/bench_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/inference/bench_samples.hpp"
#include "sim/inference/serving_report.hpp"

namespace twinsim {

namespace {

bool meets(const ServingSlo& slo, double ttft, double tpot, double e2el) {
  return (slo.ttft_s <= 0 || ttft <= slo.ttft_s) && (slo.tpot_s <= 0 || tpot <= slo.tpot_s) &&
         (slo.e2el_s <= 0 || e2el <= slo.e2el_s);
}

// vLLM prints P99, P99.9: the percentile's own digits, between `prefix` and `suffix`
std::string percentile_label(const char* prefix, double p, const char* suffix) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s%g%s", prefix, p, suffix);
  return buf;
}

}  // namespace

MetricPercentiles metric_percentiles(const std::vector<double>& values, const std::vector<double>& qs) {
  MetricPercentiles m;
  if (values.empty()) {
    m.percentile_s.assign(qs.size(), 0.0);
    return m;
  }
  double sum = 0;
  for (double v : values) sum += v;
  m.mean_s = sum / static_cast<double>(values.size());
  m.median_s = latency_percentile(values, 50);
  for (double q : qs) m.percentile_s.push_back(latency_percentile(values, q));
  return m;
}

BenchMetrics bench_metrics(const ServingResult& r, const std::vector<double>& percentiles, const ServingSlo& slo) {
  BenchMetrics m;
  m.percentiles = percentiles;
  const BenchSamples samples = bench_samples(r);
  std::vector<double> ttft, tpot, e2el;
  std::int64_t good = 0;
  for (const BenchSample& b : samples.requests) {
    // vLLM's TPOT: the time after the first token over the tokens after it
    const double per_token = b.output_len > 1 ? (b.e2el_s - b.ttft_s) / static_cast<double>(b.output_len - 1) : 0;
    ttft.push_back(b.ttft_s);
    e2el.push_back(b.e2el_s);
    if (b.output_len > 1) tpot.push_back(per_token);
    if (meets(slo, b.ttft_s, per_token, b.e2el_s)) ++good;
  }
  m.completed = static_cast<std::int64_t>(samples.requests.size());
  m.total_input = samples.total_input;
  m.total_output = samples.total_output;
  m.duration_s = samples.duration_s;
  if (m.duration_s > 0) {
    m.request_throughput = static_cast<double>(m.completed) / m.duration_s;
    m.output_throughput = static_cast<double>(m.total_output) / m.duration_s;
    m.total_token_throughput = static_cast<double>(m.total_input + m.total_output) / m.duration_s;
    if (slo.any()) m.request_goodput = static_cast<double>(good) / m.duration_s;
  }
  m.ttft = metric_percentiles(ttft, percentiles);
  m.tpot = metric_percentiles(tpot, percentiles);
  m.itl = metric_percentiles(r.itl_s, percentiles);
  m.e2el = metric_percentiles(e2el, percentiles);
  return m;
}

void print_vllm_bench(std::ostream& out, const BenchMetrics& m, double rate_per_s, const ServingSlo& slo,
                      std::int64_t max_concurrency) {
  char buf[160];
  auto row = [&](const std::string& label, double value, bool whole = false) {
    if (whole) std::snprintf(buf, sizeof buf, "%-40s %-10lld\n", label.c_str(), static_cast<long long>(value));
    else std::snprintf(buf, sizeof buf, "%-40s %-10.2f\n", label.c_str(), value);
    out << buf;
  };
  auto rule = [&](const std::string& title, char fill) {
    const std::size_t left = (50 - title.size()) / 2;
    out << std::string(left, fill) << title << std::string(50 - left - title.size(), fill) << "\n";
  };
  rule(" Serving Benchmark Result ", '=');
  row("Successful requests:", static_cast<double>(m.completed), true);
  if (max_concurrency > 0) row("Maximum request concurrency:", static_cast<double>(max_concurrency), true);
  if (std::isfinite(rate_per_s)) row("Request rate configured (RPS):", rate_per_s);
  row("Benchmark duration (s):", m.duration_s);
  row("Total input tokens:", static_cast<double>(m.total_input), true);
  row("Total generated tokens:", static_cast<double>(m.total_output), true);
  row("Request throughput (req/s):", m.request_throughput);
  if (slo.any()) row("Request goodput (req/s):", m.request_goodput);
  row("Output token throughput (tok/s):", m.output_throughput);
  row("Total Token throughput (tok/s):", m.total_token_throughput);
  auto block = [&](const char* header, const char* name, const MetricPercentiles& p) {
    rule(header, '-');
    row((std::string("Mean ") += name) += " (ms):", 1e3 * p.mean_s);
    row((std::string("Median ") += name) += " (ms):", 1e3 * p.median_s);
    std::string tail = " ";
    tail += name;
    tail += " (ms):";
    for (std::size_t i = 0; i < m.percentiles.size(); ++i)
      row(percentile_label("P", m.percentiles[i], tail.c_str()), 1e3 * p.percentile_s[i]);
  };
  block("Time to First Token", "TTFT", m.ttft);
  block("Time per Output Token (excl. 1st token)", "TPOT", m.tpot);
  block("Inter-token Latency", "ITL", m.itl);
  block("End-to-end Latency", "E2EL", m.e2el);
  out << std::string(50, '=') << "\n";
}

nlohmann::json to_json(const BenchMetrics& m) {
  auto metric = [&m](const MetricPercentiles& p) {
    nlohmann::json j = {{"mean_ms", 1e3 * p.mean_s}, {"median_ms", 1e3 * p.median_s}};
    for (std::size_t i = 0; i < m.percentiles.size(); ++i) j[percentile_label("p", m.percentiles[i], "_ms")] = 1e3 * p.percentile_s[i];
    return j;
  };
  return {{"definitions", "vllm bench serve (vllm/benchmarks/serve.py calculate_metrics; SGLang bench_serving alike)"},
          {"completed", m.completed},
          {"duration_s", m.duration_s},
          {"total_input_tokens", m.total_input},
          {"total_output_tokens", m.total_output},
          {"request_throughput", m.request_throughput},
          {"request_goodput", m.request_goodput},
          {"output_throughput", m.output_throughput},
          {"total_token_throughput", m.total_token_throughput},
          {"ttft", metric(m.ttft)},
          {"tpot", metric(m.tpot)},
          {"itl", metric(m.itl)},
          {"e2el", metric(m.e2el)}};
}

}  // namespace twinsim
