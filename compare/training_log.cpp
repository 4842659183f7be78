#include "compare/training_log.hpp"

#include <algorithm>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace twinsim::compare {

namespace {

// A figure as the logs print it: "10,050", "5.444E+03", "66.91".
double figure(const std::string& text) {
  std::string digits;
  for (char c : text)
    if (c != ',') digits += c;
  return std::stod(digits);
}

struct Series {
  std::vector<double> step_s, tps, tflops, mfu, samples, peak;
};

constexpr const char* kNumber = R"(([0-9][0-9,]*\.?[0-9]*(?:[eE][-+]?[0-9]+)?))";

bool find(const std::string& line, const std::string& before, double& out) {
  std::smatch m;
  if (!std::regex_search(line, m, std::regex(before + kNumber))) return false;
  out = figure(m[1]);
  return true;
}

// Megatron-LM's training_log and report_memory, NeMo 2's step timing
bool megatron_line(const std::string& line, Series& s) {
  double v = 0;
  bool step = false;
  if (find(line, R"(elapsed time per iteration \(ms\):\s*)", v)) s.step_s.push_back(v / 1e3), step = true;
  else if (find(line, R"(train_step_timing in s[:=]\s*)", v)) s.step_s.push_back(v), step = true;
  if (step && find(line, R"(throughput per GPU \(TFLOP/s/GPU\):\s*)", v)) s.tflops.push_back(v);
  if (line.find("memory (MB)") != std::string::npos && find(line, R"(max allocated:\s*)", v)) s.peak.push_back(v * 1048576.0);
  return step;
}

bool torchtitan_line(const std::string& line, Series& s) {
  double v = 0;
  if (!find(line, R"(\btps:\s*)", v)) return false;
  s.tps.push_back(v);
  if (find(line, R"(\btflops:\s*)", v)) s.tflops.push_back(v);
  if (find(line, R"(\bmfu:\s*)", v)) s.mfu.push_back(v / 100);
  if (find(line, R"(\bmemory:\s*)", v)) s.peak.push_back(v * 1073741824.0);  // GiB
  return true;
}

bool deepspeed_line(const std::string& line, Series& s) {
  double v = 0;
  if (!find(line, R"(CurrSamplesPerSec=)", v) && !find(line, R"(\bSamplesPerSec=)", v)) return false;
  s.samples.push_back(v);
  if (find(line, R"(MaxMemAllocated=)", v)) s.peak.push_back(v * 1073741824.0);  // round(bytes / 1024**3, 2) GB
  return true;
}

}  // namespace

std::optional<double> median_after_warmup(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  if (v.size() > 1) v.erase(v.begin());
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

const char* format_name(LogFormat f) {
  switch (f) {
    case LogFormat::megatron: return "Megatron-LM/NeMo log";
    case LogFormat::torchtitan: return "torchtitan log";
    case LogFormat::deepspeed: return "DeepSpeed log";
  }
  return "log";
}

LogRun read_training_log(const std::string& text, const std::string& origin) {
  Series megatron, titan, ds;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!megatron_line(line, megatron) && !torchtitan_line(line, titan)) deepspeed_line(line, ds);
  LogRun run;
  if (!megatron.step_s.empty()) {
    run.format = LogFormat::megatron;
    run.steps = static_cast<int>(megatron.step_s.size());
    run.step_s = median_after_warmup(megatron.step_s);
    run.tflops_per_gpu = median_after_warmup(megatron.tflops);
    if (!megatron.peak.empty()) run.peak_bytes = *std::max_element(megatron.peak.begin(), megatron.peak.end());
  } else if (!titan.tps.empty()) {
    run.format = LogFormat::torchtitan;
    run.steps = static_cast<int>(titan.tps.size());
    run.tokens_per_s_per_gpu = median_after_warmup(titan.tps);
    run.tflops_per_gpu = median_after_warmup(titan.tflops);
    run.mfu = median_after_warmup(titan.mfu);
    if (!titan.peak.empty()) run.peak_bytes = *std::max_element(titan.peak.begin(), titan.peak.end());
  } else if (!ds.samples.empty()) {
    run.format = LogFormat::deepspeed;
    run.steps = static_cast<int>(ds.samples.size());
    run.samples_per_s = median_after_warmup(ds.samples);
    if (!ds.peak.empty()) run.peak_bytes = *std::max_element(ds.peak.begin(), ds.peak.end());
  } else {
    throw std::invalid_argument(origin + ": no step line of a Megatron-LM/NeMo, torchtitan or DeepSpeed log found "
                                "(nor a profiler trace or a twinsim report)");
  }
  return run;
}

}  // namespace twinsim::compare
