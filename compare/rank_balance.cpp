#include "compare/rank_balance.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "compare/kernel_categories.hpp"
#include "compare/op_times.hpp"
#include "compare/training_log.hpp"
#include "models/op_names.hpp"

namespace twinsim::compare {

bool ranks_do_same_work(const Plan& plan, bool serving) {
  return plan.world_size() >= 2 && plan.pp == 1 && !(serving && plan.dp > 1);
}

bool waits_on_other_ranks(const std::string& op_name) {
  const std::string op = strip_layer_prefix(op_name);
  if (op.rfind(op_names::kHeadSample, 0) == 0) return true;
  return top_category(category_table().of_op(op)) == "communication";  // of_op drops the pass
}

std::map<int, double> rank_compute(const nlohmann::json& trace, const std::string& origin) {
  const nlohmann::json& events = trace.is_object() ? trace.value("traceEvents", nlohmann::json()) : trace;
  if (!events.is_array()) throw std::invalid_argument(origin + ": traceEvents: not a list of trace events");
  std::map<int, std::map<std::string, std::vector<std::pair<double, double>>>> calls;  // rank, op: (ts, dur)
  for (const nlohmann::json& e : events)
    if (e.value("ph", "") == "X")
      calls[e.at("tid").get<int>()][e.at("name").get<std::string>()].emplace_back(e.at("ts").get<double>(),
                                                                                  e.at("dur").get<double>());
  std::map<int, double> compute;
  for (auto& [rank, ops] : calls) {
    double sum = 0;
    for (auto& [name, c] : ops) {
      if (c.size() < 2 || waits_on_other_ranks(name)) continue;
      std::sort(c.begin(), c.end());  // in time order: the first call is the warm-up's
      std::vector<double> durs;
      for (const auto& tc : c) durs.push_back(tc.second);
      sum += *median_after_warmup(std::move(durs));  // a typical call of it
    }
    compute[rank] = sum;
  }
  return compute;
}

double rank_compute_ratio(const std::map<int, double>& compute) {
  if (compute.size() < 2) return 0;
  const auto [lo, hi] = std::minmax_element(compute.begin(), compute.end(),
                                            [](const auto& a, const auto& b) { return a.second < b.second; });
  return lo->second > 0 ? hi->second / lo->second : 0;  // slowest over fastest
}

double trace_rank_ratio(const std::filesystem::path& trace_file) {
  std::ifstream in(trace_file);
  if (!in) throw std::runtime_error("cannot read " + trace_file.string());
  return rank_compute_ratio(rank_compute(nlohmann::json::parse(in), trace_file.string()));
}

bool is_disturbed(double rank_ratio, double cut) { return rank_ratio >= cut; }

}  // namespace twinsim::compare
