#include "sim/inference/bench_sglang.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "sim/inference/bench_samples.hpp"

namespace twinsim {

SglangBenchMetrics sglang_bench_metrics(const ServingResult& r) {
  SglangBenchMetrics m;
  const BenchSamples samples = bench_samples(r);
  std::vector<double> ttft, e2el;
  for (const BenchSample& b : samples.requests) {
    ttft.push_back(b.ttft_s);
    e2el.push_back(b.e2el_s);
  }
  m.completed = static_cast<std::int64_t>(samples.requests.size());
  m.total_input = samples.total_input;
  m.total_output = samples.total_output;
  m.duration_s = samples.duration_s;
  if (m.duration_s > 0) {  // calculate_metrics: each total over the duration
    m.request_throughput = static_cast<double>(m.completed) / m.duration_s;
    m.input_throughput = static_cast<double>(m.total_input) / m.duration_s;
    m.output_throughput = static_cast<double>(m.total_output) / m.duration_s;
    m.total_throughput = static_cast<double>(m.total_input + m.total_output) / m.duration_s;
  }
  m.concurrency = mean_requests_in_flight(samples);
  m.e2el = metric_percentiles(e2el, {});
  m.ttft = metric_percentiles(ttft, {99});
  m.itl = metric_percentiles(r.itl_s, {95, 99});
  if (!r.itl_s.empty()) m.itl_max_s = *std::max_element(r.itl_s.begin(), r.itl_s.end());
  // avg_spec_accept_length: the tokens a verify step gave, over the steps
  if (r.verify_steps > 0)
    m.accept_length = static_cast<double>(r.verified_tokens) / static_cast<double>(r.verify_steps);
  return m;
}

std::string python_float_str(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);  // shortest digits
  const std::string text(buf, res.ptr);
  const std::size_t e = text.find('e');
  const int exp = std::atoi(text.c_str() + e + 1);
  const bool negative = text[0] == '-';
  std::string digits;
  for (std::size_t i = 0; i < e; ++i)
    if (text[i] >= '0' && text[i] <= '9') digits += text[i];
  std::string out = negative ? "-" : "";
  if (exp < -4 || exp >= 16) {  // repr's rule: scientific outside 1e-4 <= |v| < 1e16
    out += digits[0];
    if (digits.size() > 1) out.append(1, '.').append(digits, 1);
    char tail[16];
    std::snprintf(tail, sizeof tail, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + tail;
  }
  if (exp < 0) return out.append("0.").append(static_cast<std::size_t>(-exp - 1), '0').append(digits);
  const std::size_t whole = static_cast<std::size_t>(exp) + 1;
  if (digits.size() < whole) digits.append(whole - digits.size(), '0');
  out.append(digits, 0, whole).append(1, '.');
  return digits.size() > whole ? out.append(digits, whole) : out.append(1, '0');
}

void print_sglang_bench(std::ostream& out, const SglangBenchMetrics& m, double rate_per_s,
                        std::int64_t max_concurrency) {
  char buf[160];
  auto text = [&](const char* label, const std::string& value) {  // "{:<40} {:<10}"
    std::snprintf(buf, sizeof buf, "%-40s %-10s\n", label, value.c_str());
    out << buf;
  };
  auto whole = [&](const char* label, std::int64_t value) { text(label, std::to_string(value)); };
  auto row = [&](const char* label, double value) {  // "{:<40} {:<10.2f}"
    std::snprintf(buf, sizeof buf, "%-40s %-10.2f\n", label, value);
    out << buf;
  };
  auto rule = [&](const std::string& title, char fill) {  // "{s:{c}^{n}}", n = 50
    const std::size_t left = (50 - title.size()) / 2;
    out << std::string(left, fill) << title << std::string(50 - left - title.size(), fill) << "\n";
  };
  out << "\n";
  rule(" Serving Benchmark Result ", '=');
  text("Backend:", "sglang");
  text("Traffic request rate:", python_float_str(rate_per_s));
  text("Max request concurrency:", max_concurrency > 0 ? std::to_string(max_concurrency) : "not set");
  whole("Successful requests:", m.completed);
  row("Benchmark duration (s):", m.duration_s);
  whole("Total input tokens:", m.total_input);
  whole("Total generated tokens:", m.total_output);
  whole("Total generated tokens (retokenized):", m.total_output);
  row("Request throughput (req/s):", m.request_throughput);
  row("Input token throughput (tok/s):", m.input_throughput);
  row("Output token throughput (tok/s):", m.output_throughput);
  row("Total token throughput (tok/s):", m.total_throughput);
  row("Concurrency:", m.concurrency);
  if (m.accept_length > 0) row("Accept length:", m.accept_length);
  rule("End-to-End Latency", '-');
  row("Mean E2E Latency (ms):", 1e3 * m.e2el.mean_s);
  row("Median E2E Latency (ms):", 1e3 * m.e2el.median_s);
  rule("Time to First Token", '-');
  row("Mean TTFT (ms):", 1e3 * m.ttft.mean_s);
  row("Median TTFT (ms):", 1e3 * m.ttft.median_s);
  row("P99 TTFT (ms):", 1e3 * m.ttft.percentile_s[0]);
  rule("Inter-Token Latency", '-');
  row("Mean ITL (ms):", 1e3 * m.itl.mean_s);
  row("Median ITL (ms):", 1e3 * m.itl.median_s);
  row("P95 ITL (ms):", 1e3 * m.itl.percentile_s[0]);
  row("P99 ITL (ms):", 1e3 * m.itl.percentile_s[1]);
  row("Max ITL (ms):", 1e3 * m.itl_max_s);
  out << std::string(50, '=') << "\n";
}

nlohmann::json to_json(const SglangBenchMetrics& m) {
  return {{"definitions", "python -m sglang.bench_serving (python/sglang/bench_serving.py calculate_metrics)"},
          {"duration", m.duration_s},
          {"completed", m.completed},
          {"total_input_tokens", m.total_input},
          {"total_output_tokens", m.total_output},
          {"total_output_tokens_retokenized", m.total_output},
          {"request_throughput", m.request_throughput},
          {"input_throughput", m.input_throughput},
          {"output_throughput", m.output_throughput},
          {"total_throughput", m.total_throughput},
          {"concurrency", m.concurrency},
          {"accept_length", m.accept_length > 0 ? nlohmann::json(m.accept_length) : nlohmann::json()},
          {"mean_e2e_latency_ms", 1e3 * m.e2el.mean_s},
          {"median_e2e_latency_ms", 1e3 * m.e2el.median_s},
          {"mean_ttft_ms", 1e3 * m.ttft.mean_s},
          {"median_ttft_ms", 1e3 * m.ttft.median_s},
          {"p99_ttft_ms", 1e3 * m.ttft.percentile_s[0]},
          {"mean_itl_ms", 1e3 * m.itl.mean_s},
          {"median_itl_ms", 1e3 * m.itl.median_s},
          {"p95_itl_ms", 1e3 * m.itl.percentile_s[0]},
          {"p99_itl_ms", 1e3 * m.itl.percentile_s[1]},
          {"max_itl_ms", 1e3 * m.itl_max_s}};
}

}  // namespace twinsim
