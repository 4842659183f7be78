#include "compare/comparison.hpp"

#include "models/report_schema.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "models/memory_category.hpp"
#include "models/report_inference.hpp"
#include "models/report_memory.hpp"
#include "models/report_time.hpp"

namespace twinsim::compare {

namespace {

using nlohmann::json;

// A report's section `key`, refused naming it when missing.
const json& section(const json& j, const char* key, const char* side) {
  if (!j.contains(key)) throw std::invalid_argument(std::string(side) + " report: " + key + " is missing");
  return j[key];
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

void compare_memory(Comparison& c, const json& simulated, const json& measured) {
  const auto section = [](const json& report, const char* side) {
    if (!report.contains("memory")) throw std::invalid_argument(std::string(side) + " report: memory is missing");
    return read_memory_section(report["memory"], side);
  };
  const MemorySection sim = section(simulated, "simulated"), meas = section(measured, "measured");
  c.peak_bytes = {static_cast<double>(sim.peak_bytes), static_cast<double>(meas.peak_bytes)};
  for (MemCategory m : kMemCategories) {
    const auto i = static_cast<std::size_t>(m);
    c.memory.push_back({std::string(category_name(m)),
                        {static_cast<double>(sim.breakdown[i]), static_cast<double>(meas.breakdown[i])}});
  }
  // ZeRO-Offload: the optimizer's share of the host bytes on both sides (a simulated report
  // without a host breakdown is older: its host bytes were the optimizer's)
  const double predicted_host = static_cast<double>(
      sim.host_breakdown ? (*sim.host_breakdown)[static_cast<std::size_t>(MemCategory::optimizer)] : sim.host_bytes);
  const double measured_host =
      meas.host_breakdown ? static_cast<double>((*meas.host_breakdown)[static_cast<std::size_t>(MemCategory::optimizer)]) : 0;
  if (predicted_host > 0 || measured_host > 0) c.host_optimizer_bytes = Pair{predicted_host, measured_host};
  if (sim.nvme_bytes || meas.nvme_bytes)
    c.nvme_bytes = Pair{static_cast<double>(sim.nvme_bytes.value_or(0)), static_cast<double>(meas.nvme_bytes.value_or(0))};
}

bool is_inference(const json& simulated) { return simulated.contains("inference") && !simulated.contains("time"); }


PassComparison pass_comparison(const json& simulated, const json& measured, const std::string& phase) {
  PassComparison p;
  // per-pass op times are optional on either side (an older report)
  if (!has_pass_ops(simulated, phase) || !has_pass_ops(measured, phase)) return p;
  p.ops = op_rows(simulated_pass_op_times(simulated, phase), measured_pass_op_times(measured, phase));
  p.op_categories = categories(p.ops);
  return p;
}

Comparison compare_inference(const json& simulated, const json& measured) {
  Comparison c;
  // a report without the section is refused naming its first key (a training measurement)
  const auto summary = [](const json& report, const char* side) {
    return read_inference_summary(report.contains("inference") ? report["inference"] : json::object(), side);
  };
  const InferenceSummary sim = summary(simulated, "simulated"), meas = summary(measured, "measured");
  InferenceComparison inf;
  inf.ttft_s = {sim.ttft_s, meas.ttft_s};
  inf.tpot_s = {sim.tpot_s, meas.tpot_s};
  inf.output_tokens_per_s = {sim.output_tokens_per_s, meas.output_tokens_per_s};
  inf.kv_cache_bytes_per_token = {sim.kv_cache_bytes_per_token, meas.kv_cache_bytes_per_token};
  inf.prefill = pass_comparison(simulated, measured, "prefill");
  inf.decode = pass_comparison(simulated, measured, "decode");
  c.inference = std::move(inf);
  compare_memory(c, simulated, measured);
  return c;
}

json ops_json(const std::vector<OpRow>& rows, const char* calls_key, const char* time_key) {
  json ops = json::array();
  for (const OpRow& r : rows)
    ops.push_back({{"name", r.name}, {"category", op_category(r.name)}, {calls_key, r.calls},
                   {"per_call_s", pair_json(r.per_call_s)}, {time_key, pair_json(r.per_step_s)},
                   {"predicted_only", r.predicted_only}, {"measured_only", r.measured_only}});
  return ops;
}

json categories_json(const std::vector<NamedPair>& cats) {
  json j = json::object();
  for (const NamedPair& p : cats) j[p.name] = pair_json(p.value);
  return j;
}

json memory_json(const Comparison& c) {
  json mem = json::object();
  for (const NamedPair& p : c.memory) mem[p.name] = pair_json(p.value);
  json j = {{"peak_bytes", pair_json(c.peak_bytes)}, {"breakdown", mem}};
  if (c.host_optimizer_bytes) j["host_optimizer_bytes"] = pair_json(*c.host_optimizer_bytes);
  if (c.nvme_bytes) j["nvme_bytes"] = pair_json(*c.nvme_bytes);
  return j;
}

json inference_json(const Comparison& c) {
  const InferenceComparison& inf = *c.inference;
  const auto pass = [](const PassComparison& p) {
    return json{{"ops", ops_json(p.ops, "calls_per_pass", "per_pass_s")},
                {"op_categories_s", categories_json(p.op_categories)}};
  };
  return {{kSchemaVersionKey, kReportSchemaVersion},
          {"kind", "inference"},
          {"ttft_s", pair_json(inf.ttft_s)},
          {"tpot_s", pair_json(inf.tpot_s)},
          {"output_tokens_per_s", pair_json(inf.output_tokens_per_s)},
          {"kv_cache_bytes_per_token", pair_json(inf.kv_cache_bytes_per_token)},
          {"prefill", pass(inf.prefill)},
          {"decode", pass(inf.decode)},
          {"memory", memory_json(c)}};
}

std::string memory_table(const Comparison& c) {
  constexpr double kMiB = 1048576.0;
  const char* mib_row = "%-28s %12.3f %12.3f %+12.3f %9s\n";
  std::string out = "\nmemory per GPU (MiB)\n";
  out += line(mib_row, "peak", c.peak_bytes.predicted / kMiB, c.peak_bytes.measured / kMiB,
              c.peak_bytes.abs_error() / kMiB, percent(c.peak_bytes));
  for (const NamedPair& p : c.memory)
    out += line(mib_row, "  " + p.name, p.value.predicted / kMiB, p.value.measured / kMiB, p.value.abs_error() / kMiB,
                percent(p.value));
  if (const auto& h = c.host_optimizer_bytes)
    out += line(mib_row, "host: offloaded optimizer", h->predicted / kMiB, h->measured / kMiB, h->abs_error() / kMiB,
                percent(*h));
  if (const auto& n = c.nvme_bytes)
    out += line(mib_row, "nvme: offloaded state", n->predicted / kMiB, n->measured / kMiB, n->abs_error() / kMiB,
                percent(*n));
  return out;
}

std::string ops_table(const std::vector<OpRow>& ops, const std::vector<NamedPair>& cats, int top_ops,
                      const std::string& title, const std::string& per) {
  const char* time_row = "%-28s %12.6f %12.6f %+12.6f %9s\n";
  std::string out;
  if (ops.empty()) return out;
  out += "\n" + title + "time per " + per + " by op category (s), largest gap first\n";
  for (const NamedPair& p : cats)
    out += line(time_row, "  " + p.name, p.value.predicted, p.value.measured, p.value.abs_error(), percent(p.value));
  out += "\n" + title + "ops with the largest gap (s per " + per + ")\n";
  for (int i = 0; i < top_ops && i < static_cast<int>(ops.size()); ++i) {
    const OpRow& r = ops[i];
    const std::string mark = r.predicted_only ? " (not measured)" : r.measured_only ? " (not predicted)" : "";
    out += line(time_row, "  " + r.name + mark, r.per_step_s.predicted, r.per_step_s.measured,
                r.per_step_s.abs_error(), percent(r.per_step_s));
  }
  return out;
}

std::string format_inference(const Comparison& c, int top_ops, const ColumnLabels& labels) {
  const InferenceComparison& inf = *c.inference;
  const char* time_row = "%-28s %12.6f %12.6f %+12.6f %9s\n";
  const char* rate_row = "%-28s %12.1f %12.1f %+12.1f %9s\n";
  char head[160];
  std::snprintf(head, sizeof head, "%-28s %12s %12s %12s %9s\n", "", labels.a.c_str(), labels.b.c_str(),
                labels.difference().c_str(), "error");
  std::string out = head;
  out += line(time_row, "TTFT, prefill (s)", inf.ttft_s.predicted, inf.ttft_s.measured, inf.ttft_s.abs_error(),
              percent(inf.ttft_s));
  out += line(time_row, "TPOT, decode pass (s)", inf.tpot_s.predicted, inf.tpot_s.measured, inf.tpot_s.abs_error(),
              percent(inf.tpot_s));
  out += line(rate_row, "output tokens/s", inf.output_tokens_per_s.predicted, inf.output_tokens_per_s.measured,
              inf.output_tokens_per_s.abs_error(), percent(inf.output_tokens_per_s));
  out += line(rate_row, "KV cache bytes per token", inf.kv_cache_bytes_per_token.predicted,
              inf.kv_cache_bytes_per_token.measured, inf.kv_cache_bytes_per_token.abs_error(),
              percent(inf.kv_cache_bytes_per_token));
  out += "(TPOT: predicted is the mean decode pass, measured the median decode step)\n";
  out += memory_table(c);
  out += ops_table(inf.prefill.ops, inf.prefill.op_categories, top_ops, "prefill: ", "pass");
  out += ops_table(inf.decode.ops, inf.decode.op_categories, top_ops, "decode (mean pass): ", "pass");
  return out;
}

}  // namespace

Comparison compare_reports(const json& simulated, const json& measured) {
  if (is_inference(simulated)) return compare_inference(simulated, measured);
  Comparison c;
  c.step_s = {read_time_section(section(simulated, "time", "simulated"), "simulated").step_s,
              read_time_section(section(measured, "time", "measured"), "measured").step_s};
  // Per-op times are optional on either side (an older report): then only step and memory.
  const bool have_ops = simulated.contains("time") && simulated["time"].contains("ops") && measured.contains("ops");
  if (have_ops) {
    c.ops = op_rows(simulated_op_times(simulated), measured_op_times(measured));
    c.op_categories = categories(c.ops);
  }
  compare_memory(c, simulated, measured);
  return c;
}

json to_json(const Comparison& c) {
  if (c.inference) return inference_json(c);
  json ops = json::array();
  for (const OpRow& r : c.ops)
    ops.push_back({{"name", r.name}, {"category", op_category(r.name)}, {"calls_per_step", r.calls},
                   {"per_call_s", pair_json(r.per_call_s)}, {"per_step_s", pair_json(r.per_step_s)},
                   {"predicted_only", r.predicted_only}, {"measured_only", r.measured_only}});
  json cats = json::object();
  for (const NamedPair& p : c.op_categories) cats[p.name] = pair_json(p.value);
  return {{kSchemaVersionKey, kReportSchemaVersion}, {"step_s", pair_json(c.step_s)}, {"ops", ops},
          {"op_categories_s", cats}, {"memory", memory_json(c)}};
}

std::string format_comparison(const Comparison& c, int top_ops, const ColumnLabels& labels) {
  if (c.inference) return format_inference(c, top_ops, labels);
  std::string out;
  const char* time_row = "%-28s %12.6f %12.6f %+12.6f %9s\n";
  char head[160];
  std::snprintf(head, sizeof head, "%-28s %12s %12s %12s %9s\n", "", labels.a.c_str(), labels.b.c_str(),
                labels.difference().c_str(), "error");
  out += head;
  out += line(time_row, "step (s)", c.step_s.predicted, c.step_s.measured, c.step_s.abs_error(), percent(c.step_s));
  out += memory_table(c);
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

nlohmann::json read_report(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  nlohmann::json report;
  try {
    report = nlohmann::json::parse(f);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(path + ": not JSON: " + e.what());
  }
  // reports from before versioning have none: they are version 1's keys
  if (report.is_object() && report.contains(kSchemaVersionKey) &&
      (!report[kSchemaVersionKey].is_number_integer() || report[kSchemaVersionKey].get<int>() > kReportSchemaVersion))
    throw std::runtime_error(path + ": " + kSchemaVersionKey + " " + report[kSchemaVersionKey].dump() +
                             " is not one this twinsim reads (up to " + std::to_string(kReportSchemaVersion) +
                             "): compare it with the twinsim that wrote it");
  return report;
}

}  // namespace twinsim::compare
