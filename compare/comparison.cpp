#include "compare/comparison.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

namespace twinsim::compare {

namespace {

using nlohmann::json;

// The report's memory categories (SCENARIO.md, memory.breakdown), in its order.
const char* const kMemoryCategories[] = {"params", "grads", "optimizer", "activations", "kv_cache", "buffers"};

const json& at_path(const json& j, const std::string& a, const std::string& b, const char* side) {
  if (!j.contains(a) || !j[a].contains(b))
    throw std::invalid_argument(std::string(side) + " report: " + a + "." + b + " is missing");
  return j[a][b];
}

std::vector<OpRow> op_rows(const OpTimes& sim, const OpTimes& meas) {
  std::set<std::string> names;
  for (const auto& [n, t] : sim) names.insert(n);
  for (const auto& [n, t] : meas) names.insert(n);
  std::vector<OpRow> rows;
  for (const std::string& n : names) {
    OpRow r;
    r.name = n;
    const auto s = sim.find(n), m = meas.find(n);
    r.predicted_only = m == meas.end();
    r.measured_only = s == sim.end();
    // The simulator's count is for one GPU; the executor's for the ranks that ran the op,
    // summed over layers that may live on other stages, so the simulator's count weighs both.
    r.calls = s != sim.end() ? s->second.calls : m->second.calls;
    r.per_call_s = {s != sim.end() ? s->second.per_call_s : 0, m != meas.end() ? m->second.per_call_s : 0};
    r.per_step_s = {r.per_call_s.predicted * r.calls, r.per_call_s.measured * r.calls};
    rows.push_back(r);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const OpRow& a, const OpRow& b) {
    return std::abs(a.per_step_s.abs_error()) > std::abs(b.per_step_s.abs_error());
  });
  return rows;
}

std::vector<NamedPair> categories(const std::vector<OpRow>& ops) {
  std::map<std::string, Pair> sums;
  for (const OpRow& r : ops) {
    Pair& p = sums[op_category(r.name)];
    p.predicted += r.per_step_s.predicted;
    p.measured += r.per_step_s.measured;
  }
  std::vector<NamedPair> out;
  for (const auto& [n, p] : sums) out.push_back({n, p});
  std::stable_sort(out.begin(), out.end(), [](const NamedPair& a, const NamedPair& b) {
    return std::abs(a.value.abs_error()) > std::abs(b.value.abs_error());
  });
  return out;
}

double number_or_zero(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0;
}

json pair_json(const Pair& p) {
  const double rel = p.rel_error();
  return {{"predicted", p.predicted}, {"measured", p.measured}, {"abs_error", p.abs_error()},
          {"rel_error", std::isfinite(rel) ? json(rel) : json(nullptr)}};
}

std::string percent(const Pair& p) {
  const double r = p.rel_error();
  if (!std::isfinite(r)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * r);
  return buf;
}

std::string line(const char* fmt, const std::string& name, double a, double b, double c, const std::string& rel) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, name.c_str(), a, b, c, rel.c_str());
  return buf;
}

}  // namespace

Comparison compare_reports(const json& simulated, const json& measured) {
  Comparison c;
  c.step_s = {at_path(simulated, "time", "step_s", "simulated").get<double>(),
              at_path(measured, "time", "step_s", "measured").get<double>()};
  // Per-op times are optional on either side (an older report): then only step and memory.
  const bool have_ops = simulated.contains("time") && simulated["time"].contains("ops") && measured.contains("ops");
  if (have_ops) {
    c.ops = op_rows(simulated_op_times(simulated), measured_op_times(measured));
    c.op_categories = categories(c.ops);
  }
  c.peak_bytes = {at_path(simulated, "memory", "peak_bytes", "simulated").get<double>(),
                  at_path(measured, "memory", "peak_bytes", "measured").get<double>()};
  const json& sb = at_path(simulated, "memory", "breakdown", "simulated");
  const json& mb = at_path(measured, "memory", "breakdown", "measured");
  for (const char* cat : kMemoryCategories) c.memory.push_back({cat, {number_or_zero(sb, cat), number_or_zero(mb, cat)}});
  return c;
}

json to_json(const Comparison& c) {
  json ops = json::array();
  for (const OpRow& r : c.ops)
    ops.push_back({{"name", r.name}, {"category", op_category(r.name)}, {"calls_per_step", r.calls},
                   {"per_call_s", pair_json(r.per_call_s)}, {"per_step_s", pair_json(r.per_step_s)},
                   {"predicted_only", r.predicted_only}, {"measured_only", r.measured_only}});
  json cats = json::object(), mem = json::object();
  for (const NamedPair& p : c.op_categories) cats[p.name] = pair_json(p.value);
  for (const NamedPair& p : c.memory) mem[p.name] = pair_json(p.value);
  return {{"step_s", pair_json(c.step_s)},
          {"ops", ops},
          {"op_categories_s", cats},
          {"memory", {{"peak_bytes", pair_json(c.peak_bytes)}, {"breakdown", mem}}}};
}

std::string format_comparison(const Comparison& c, int top_ops) {
  std::string out;
  const char* time_row = "%-28s %12.6f %12.6f %+12.6f %9s\n";
  const char* mib_row = "%-28s %12.3f %12.3f %+12.3f %9s\n";
  char head[160];
  std::snprintf(head, sizeof head, "%-28s %12s %12s %12s %9s\n", "", "predicted", "measured", "pred-meas", "error");
  constexpr double kMiB = 1048576.0;
  out += head;
  out += line(time_row, "step (s)", c.step_s.predicted, c.step_s.measured, c.step_s.abs_error(), percent(c.step_s));
  out += "\nmemory per GPU (MiB)\n";
  out += line(mib_row, "peak", c.peak_bytes.predicted / kMiB, c.peak_bytes.measured / kMiB,
              c.peak_bytes.abs_error() / kMiB, percent(c.peak_bytes));
  for (const NamedPair& p : c.memory)
    out += line(mib_row, "  " + p.name, p.value.predicted / kMiB, p.value.measured / kMiB, p.value.abs_error() / kMiB,
                percent(p.value));
  if (c.ops.empty()) return out;
  out += "\ntime per step by op category (s), largest gap first\n";
  for (const NamedPair& p : c.op_categories)
    out += line(time_row, "  " + p.name, p.value.predicted, p.value.measured, p.value.abs_error(), percent(p.value));
  out += "\nops with the largest gap (s per step)\n";
  for (int i = 0; i < top_ops && i < static_cast<int>(c.ops.size()); ++i) {
    const OpRow& r = c.ops[i];
    const std::string mark = r.predicted_only ? " (not measured)" : r.measured_only ? " (not predicted)" : "";
    out += line(time_row, "  " + r.name + mark, r.per_step_s.predicted, r.per_step_s.measured,
                r.per_step_s.abs_error(), percent(r.per_step_s));
  }
  return out;
}

}  // namespace twinsim::compare
