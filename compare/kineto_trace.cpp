#include "compare/kineto_trace.hpp"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

#include "compare/kernel_categories.hpp"

namespace twinsim::compare {

namespace {

struct Span {
  double begin_us = 0, end_us = 0;
};

struct Kernel {
  std::string name;
  bool on_sms = true;  // false: a copy or fill (gpu_memcpy, gpu_memset)
  int device = 0;
  Span span;
  double dur_us = 0;  // as the trace gives it (end - begin loses digits to a large ts)
};

double number(const nlohmann::json& e, const char* key) {
  const auto it = e.find(key);
  return it != e.end() && it->is_number() ? it->get<double>() : 0;
}

std::vector<Kernel> kernels_of(const nlohmann::json& events) {
  std::vector<Kernel> out;
  for (const nlohmann::json& e : events) {
    const std::string cat = e.value("cat", "");
    if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
    if (!e.contains("dur") || !e.contains("ts")) continue;
    Kernel k;
    k.name = e.value("name", "");
    k.on_sms = cat == "kernel";
    const auto args = e.find("args");
    k.device = args != e.end() && args->contains("device") && (*args)["device"].is_number_integer() ? (*args)["device"].get<int>() : 0;
    k.dur_us = number(e, "dur");
    k.span = {number(e, "ts"), number(e, "ts") + k.dur_us};
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<Span> profiler_steps(const nlohmann::json& events) {
  std::vector<Span> out;
  for (const nlohmann::json& e : events)
    if (e.value("ph", "") == "X" && e.value("name", "").starts_with("ProfilerStep#") && e.value("cat", "") != "gpu_user_annotation")
      out.push_back({number(e, "ts"), number(e, "ts") + number(e, "dur")});
  return out;
}

// The measure of the union of the spans (microseconds).
double union_us(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin_us < b.begin_us; });
  double total = 0, begin = 0, end = -std::numeric_limits<double>::infinity();
  for (const Span& s : spans) {
    if (s.begin_us > end) {
      if (end > begin) total += end - begin;
      begin = s.begin_us;
      end = s.end_us;
    } else {
      end = std::max(end, s.end_us);
    }
  }
  if (end > begin) total += end - begin;
  return total;
}

int busiest_device(const std::vector<Kernel>& kernels) {
  std::map<int, double> us;
  for (const Kernel& k : kernels) us[k.device] += k.dur_us;
  return std::max_element(us.begin(), us.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
}

std::vector<KernelGroup> group_by_name(const std::vector<Kernel>& kernels) {
  std::map<std::string, KernelGroup> groups;
  for (const Kernel& k : kernels) {
    KernelGroup& g = groups[k.name];
    g.name = k.name;
    g.category = category_table().of_kernel(k.name);
    ++g.calls;
    g.total_s += k.dur_us * 1e-6;
  }
  std::vector<KernelGroup> out;
  for (auto& [name, g] : groups) out.push_back(std::move(g));
  std::sort(out.begin(), out.end(), [](const KernelGroup& a, const KernelGroup& b) { return a.total_s > b.total_s; });
  return out;
}

// busy, exposed communication and the window's ends, from the device's kernels
void time_shares(const std::vector<Kernel>& kernels, const std::vector<Span>& steps, TraceRun& run) {
  std::vector<Span> compute, comm, sms;
  Span window{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  for (const Kernel& k : kernels) {
    window = {std::min(window.begin_us, k.span.begin_us), std::max(window.end_us, k.span.end_us)};
    if (!k.on_sms) continue;
    sms.push_back(k.span);
    (top_category(category_table().of_kernel(k.name)) == "communication" ? comm : compute).push_back(k.span);
  }
  for (const Span& s : steps) window = {std::min(window.begin_us, s.begin_us), std::max(window.end_us, s.end_us)};
  const double per_step = 1e-6 / run.steps;
  run.window_s = (window.end_us - window.begin_us) * 1e-6;
  run.busy_s = union_us(sms) * per_step;
  run.exposed_comm_s = (union_us(sms) - union_us(compute)) * per_step;
  run.idle_s = run.window_s / run.steps - run.busy_s;
}

}  // namespace

bool is_kineto_trace(const nlohmann::json& j) { return j.is_object() && j.contains("traceEvents"); }

TraceRun read_kineto_trace(const nlohmann::json& trace, const std::string& origin) {
  if (!is_kineto_trace(trace) || !trace["traceEvents"].is_array())
    throw std::invalid_argument(origin + ": not a profiler trace (no traceEvents array)");
  const nlohmann::json& events = trace["traceEvents"];
  std::vector<Kernel> all = kernels_of(events);
  if (all.empty()) throw std::invalid_argument(origin + ": the trace has no GPU kernel (profile with ProfilerActivity.CUDA)");
  TraceRun run;
  run.device = busiest_device(all);
  std::vector<Kernel> kernels;
  for (Kernel& k : all)
    if (k.device == run.device) kernels.push_back(std::move(k));
  const auto props = trace.find("deviceProperties");
  if (props != trace.end() && props->is_array())
    for (const nlohmann::json& p : *props)
      if (p.value("id", -1) == run.device) run.gpu_name = p.value("name", "");
  const std::vector<Span> steps = profiler_steps(events);
  run.steps = steps.empty() ? 1 : static_cast<int>(steps.size());
  for (const Span& s : steps) run.step_s += (s.end_us - s.begin_us) * 1e-6 / static_cast<double>(steps.size());
  run.kernels = group_by_name(kernels);
  for (const KernelGroup& g : run.kernels) {
    run.category_s[g.category] += g.total_s / run.steps;
    if (g.category == kUnknownCategory) run.unknown.push_back(g);
  }
  time_shares(kernels, steps, run);
  return run;
}

}  // namespace twinsim::compare
