#include "compare/op_times.hpp"

#include <cctype>
#include <stdexcept>
#include <utility>

namespace twinsim::compare {

using nlohmann::json;

namespace {

// time.breakdown keys that are one op per step in the executor's profile: the optimizer
// step, and the data-parallel gradient reduction (the executor does not overlap it with
// the backward pass, so its whole time is exposed, as the simulator's key counts).
const std::pair<const char*, const char*> kBreakdownOps[] = {{"optimizer_s", "optimizer.step"},
                                                            {"dp_comm_exposed_s", "dp.grad_reduce"}};

}  // namespace

std::string strip_layer_prefix(const std::string& name) {
  if (name.rfind("layer", 0) != 0) return name;
  std::size_t i = 5;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  if (i == 5 || i >= name.size() || name[i] != '.') return name;
  return name.substr(i + 1);
}

OpTimes simulated_op_times(const json& report) {
  const json* ops = report.contains("time") ? &report["time"] : nullptr;
  if (!ops || !ops->contains("ops") || !(*ops)["ops"].is_array())
    throw std::invalid_argument("simulated report: time.ops is missing or not a list");
  OpTimes out;
  for (const json& op : (*ops)["ops"]) {
    OpTime& t = out[strip_layer_prefix(op.at("name").get<std::string>())];
    const double calls = op.at("count").get<double>(), s = op.at("time_s").get<double>();
    // the same name twice (per-layer names): a call-weighted mean
    const double total = t.total_s() + calls * s;
    t.calls += calls;
    t.per_call_s = t.calls > 0 ? total / t.calls : 0;
  }
  // Step-level parts the simulator prices outside the layers, under the executor's names
  for (const auto& [key, name] : kBreakdownOps) {
    const json& b = (*ops)["breakdown"];
    if (b.is_object() && b.contains(key) && b[key].get<double>() > 0 && !out.count(name))
      out[name] = {1, b[key].get<double>()};
  }
  return out;
}

OpTimes measured_op_times(const json& report) {
  if (!report.contains("ops") || !report["ops"].is_object())
    throw std::invalid_argument("measured report: ops is missing or not a mapping");
  OpTimes out;
  for (const auto& [name, op] : report["ops"].items()) {
    OpTime& t = out[strip_layer_prefix(name)];
    const double total = t.total_s() + op.at("mean_s_per_step").get<double>();
    t.calls += op.at("count_per_step").get<double>();
    t.per_call_s = t.calls > 0 ? total / t.calls : 0;
  }
  return out;
}

std::string op_category(const std::string& name) {
  const std::string bare = strip_layer_prefix(name);
  const std::size_t first = bare.find('.'), last = bare.rfind('.');
  if (first == std::string::npos) return bare;
  const std::string module = bare.substr(0, first);
  std::string pass = bare.substr(last + 1);
  if (pass.rfind("bwd", 0) == 0) pass = "bwd";
  if (pass != "fwd" && pass != "bwd" && pass != "recompute") return module;
  return module + " " + pass;
}

}  // namespace twinsim::compare
