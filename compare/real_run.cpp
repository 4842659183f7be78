#include "compare/real_run.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "compare/kernel_categories.hpp"

namespace twinsim::compare {

namespace {

using nlohmann::json;

const json& training_time(const json& simulated) {
  if (!simulated.contains("time") || !simulated["time"].contains("ops"))
    throw std::invalid_argument("simulated report: time.ops is missing (a training report of `twinsim simulate --json`)");
  return simulated["time"];
}

double breakdown(const json& time, const char* key) {
  return time.contains("breakdown") && time["breakdown"].contains(key) ? time["breakdown"][key].get<double>() : 0;
}

// The simulator's ops per step on its reported GPU, by category; unmatched ops named.
std::map<std::string, double> predicted_categories(const json& time, std::vector<std::string>& unknown) {
  std::map<std::string, double> out;
  std::set<std::string> missing;
  for (const json& op : time["ops"]) {
    const std::string name = op["name"].get<std::string>();
    const std::string category = category_table().of_op(name);
    if (category == kUnknownCategory) missing.insert(name);
    out[category] += op["time_s"].get<double>() * op["count"].get<double>();
  }
  unknown.assign(missing.begin(), missing.end());
  return out;
}

void common_from_report(const json& simulated, RealRunComparison& c) {
  const json& time = training_time(simulated);
  if (time.contains("step_s_interval")) c.step_s_interval = time["step_s_interval"].get<std::vector<double>>();
}

double throughput(const json& simulated, const char* key) { return simulated["throughput"][key].get<double>(); }

}  // namespace

RealRunComparison compare_with_trace(const json& simulated, const TraceRun& trace) {
  RealRunComparison c;
  c.run = "PyTorch profiler trace";
  common_from_report(simulated, c);
  const json& time = training_time(simulated);
  std::map<std::string, double> predicted = predicted_categories(time, c.unknown_ops);
  std::map<std::string, double> measured;
  for (const auto& [category, s] : trace.category_s) {
    measured[top_category(category)] += s;
    if (top_category(category) == "communication") c.collectives.push_back({category, {0, s}});
  }
  std::set<std::string> names;
  for (const auto& [n, s] : predicted) names.insert(n);
  for (const auto& [n, s] : measured) names.insert(n);
  for (const std::string& n : names) c.categories.push_back({n, {predicted[n], measured[n]}});
  if (trace.step_s > 0) c.step_s = Pair{time["step_s"].get<double>(), trace.step_s};
  c.exposed_comm_s = Pair{breakdown(time, "tp_comm_s") + breakdown(time, "cp_comm_s") + breakdown(time, "ep_comm_s") +
                              breakdown(time, "dp_comm_exposed_s"),
                          trace.exposed_comm_s};
  c.idle_s = Pair{breakdown(time, "pp_bubble_s"), trace.idle_s};
  c.unknown_kernels = trace.unknown;
  c.notes.push_back("device " + std::to_string(trace.device) + (trace.gpu_name.empty() ? "" : " (" + trace.gpu_name + ")") +
                    ", " + std::to_string(trace.steps) + " profiled steps; per-step figures are the trace's totals over them");
  return c;
}

RealRunComparison compare_with_log(const json& simulated, const LogRun& log, std::optional<double> global_batch) {
  RealRunComparison c;
  c.run = format_name(log.format);
  common_from_report(simulated, c);
  const double step = training_time(simulated)["step_s"].get<double>();
  const double tokens_per_gpu = throughput(simulated, "tokens_per_s_per_gpu") * step;  // per step
  if (log.step_s) c.step_s = Pair{step, *log.step_s};
  if (log.tokens_per_s_per_gpu) {
    c.tokens_per_s_per_gpu = Pair{throughput(simulated, "tokens_per_s_per_gpu"), *log.tokens_per_s_per_gpu};
    c.step_s = Pair{step, tokens_per_gpu / *log.tokens_per_s_per_gpu};
    c.notes.push_back("step: the scenario's tokens per GPU and step over the log's tokens/s per GPU");
  }
  if (log.samples_per_s) {  // DeepSpeed's SamplesPerSec: the global batch's sequences over the step's wall clock
    if (global_batch) {
      c.step_s = Pair{step, *global_batch / *log.samples_per_s};
      c.notes.push_back("step: the global batch (--global-batch) over the log's samples/s");
    } else {
      c.notes.push_back("the log gives samples/s: give --global-batch (sequences per step) to compare the step");
    }
  }
  if (log.tflops_per_gpu) {
    c.tflops_per_gpu = Pair{throughput(simulated, "model_tflops_per_gpu"), *log.tflops_per_gpu};
    c.notes.push_back("TFLOP/s per GPU: the log's own FLOP count against the simulator's model FLOPs");
  }
  if (log.mfu) c.mfu = Pair{throughput(simulated, "mfu"), *log.mfu};
  if (log.peak_bytes && simulated.contains("memory"))
    c.peak_bytes = Pair{simulated["memory"]["peak_bytes"].get<double>(), *log.peak_bytes};
  c.notes.push_back(std::to_string(log.steps) + " step lines; each figure the median after the first");
  return c;
}

namespace {

json pair_json(const Pair& p) {
  json j = {{"predicted", p.predicted}, {"measured", p.measured}, {"abs_error", p.abs_error()}};
  j["rel_error"] = std::isfinite(p.rel_error()) ? json(p.rel_error()) : json(nullptr);
  return j;
}

void optional_pair(json& j, const char* key, const std::optional<Pair>& p) {
  if (p) j[key] = pair_json(*p);
}

std::string row(const std::string& label, const Pair& p, double scale, const char* unit) {
  char buf[200];
  const double rel = p.rel_error();
  std::snprintf(buf, sizeof buf, "  %-30s %12.4g %12.4g %s  %s\n", label.c_str(), p.predicted * scale, p.measured * scale, unit,
                std::isfinite(rel) ? (std::to_string(static_cast<int>(std::lround(100 * rel))) + "%").c_str() : "-");
  return buf;
}

}  // namespace

json to_json(const RealRunComparison& c) {
  json j = {{"run", c.run}};
  optional_pair(j, "step_s", c.step_s);
  if (c.step_s_interval) {
    j["step_s_interval"] = *c.step_s_interval;
    if (c.step_s)
      j["measured_in_interval"] = c.step_s->measured >= (*c.step_s_interval)[0] && c.step_s->measured <= (*c.step_s_interval)[1];
  }
  optional_pair(j, "tokens_per_s_per_gpu", c.tokens_per_s_per_gpu);
  optional_pair(j, "tflops_per_gpu", c.tflops_per_gpu);
  optional_pair(j, "mfu", c.mfu);
  optional_pair(j, "peak_bytes", c.peak_bytes);
  optional_pair(j, "exposed_comm_s", c.exposed_comm_s);
  optional_pair(j, "idle_s", c.idle_s);
  j["categories"] = json::object();
  for (const NamedPair& n : c.categories) j["categories"][n.name] = pair_json(n.value);
  j["collectives_s"] = json::object();
  for (const NamedPair& n : c.collectives) j["collectives_s"][n.name] = n.value.measured;
  j["unknown_kernels"] = json::array();
  for (const KernelGroup& k : c.unknown_kernels)
    j["unknown_kernels"].push_back({{"name", k.name}, {"calls", k.calls}, {"total_s", k.total_s}});
  j["unknown_ops"] = c.unknown_ops;
  j["notes"] = c.notes;
  return j;
}

std::string format_real_run(const RealRunComparison& c) {
  std::string out = "simulated report against a " + c.run + "\n";
  out += "  " + std::string(30, ' ') + "    predicted     measured       pred-meas\n";
  if (c.step_s) out += row("step", *c.step_s, 1, "s");
  if (c.step_s_interval && c.step_s) {
    const bool in = c.step_s->measured >= (*c.step_s_interval)[0] && c.step_s->measured <= (*c.step_s_interval)[1];
    char buf[160];
    std::snprintf(buf, sizeof buf, "  the measured step is %s the prediction's 80%% interval %.4g-%.4g s\n", in ? "inside" : "OUTSIDE",
                  (*c.step_s_interval)[0], (*c.step_s_interval)[1]);
    out += buf;
  }
  if (c.tokens_per_s_per_gpu) out += row("tokens/s per GPU", *c.tokens_per_s_per_gpu, 1, " ");
  if (c.tflops_per_gpu) out += row("TFLOP/s per GPU", *c.tflops_per_gpu, 1, " ");
  if (c.mfu) out += row("MFU", *c.mfu, 100, "%");
  if (c.peak_bytes) out += row("peak memory", *c.peak_bytes, 1.0 / 1073741824, "GiB");
  if (!c.categories.empty()) out += "per step, by category (compare/kernel_categories.csv)\n";
  for (const NamedPair& n : c.categories) out += row(n.name, n.value, 1, "s");
  for (const NamedPair& n : c.collectives) out += row("  " + n.name + " (measured)", n.value, 1, "s");
  if (c.exposed_comm_s) out += row("exposed communication", *c.exposed_comm_s, 1, "s");
  if (c.idle_s) out += row("idle (no kernel running)", *c.idle_s, 1, "s");
  if (!c.unknown_kernels.empty()) out += std::to_string(c.unknown_kernels.size()) + " kernels no category matched (in 'unknown'):\n";
  for (const KernelGroup& k : c.unknown_kernels) {
    char buf[320];
    std::snprintf(buf, sizeof buf, "  %10.6f s  %6lld calls  %.200s\n", k.total_s, k.calls, k.name.c_str());
    out += buf;
  }
  for (const std::string& op : c.unknown_ops) out += "  simulator op without a category: " + op + "\n";
  for (const std::string& note : c.notes) out += "note: " + note + "\n";
  return out;
}

}  // namespace twinsim::compare
