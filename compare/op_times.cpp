#include "compare/op_times.hpp"
#include "models/op_names.hpp"
#include "models/report_ops.hpp"
#include "models/report_time.hpp"

#include <cctype>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

namespace twinsim::compare {

using nlohmann::json;

namespace {

// time.breakdown keys that are one op per step in the executor's profile: the optimizer
// step, and the data-parallel gradient reduction (the executor does not overlap it with
// the backward pass, so its whole time is exposed, as the simulator's key counts).
const std::pair<double TimeBreakdown::*, const char*> kBreakdownOps[] = {
    {&TimeBreakdown::optimizer_s, op_names::kOptimizerStep}, {&TimeBreakdown::dp_comm_exposed_s, op_names::kDpGradReduce}};

// Predicted rows (models/report_ops.hpp): per-call means over names that repeat.
OpTimes simulated_list(const json& list, const std::string& where) {
  OpTimes out;
  for (const PredictedOp& op : read_predicted_ops(list, where)) {
    OpTime& t = out[strip_layer_prefix(op.name)];
    // the same name twice (per-layer names): a call-weighted mean
    const double total = t.total_s() + op.count * op.time_s;
    t.calls += op.count;
    t.per_call_s = t.calls > 0 ? total / t.calls : 0;
  }
  return out;
}

// Measured ops {"layer3.attn.qkv.fwd": {count, mean}}: layers merged into a per-call mean.
OpTimes measured_map(const json& map, OpUnit unit, const std::string& where) {
  OpTimes out;
  for (const auto& [name, op] : read_measured_ops(map, unit, where)) {
    OpTime& t = out[strip_layer_prefix(name)];
    const double total = t.total_s() + op.mean_s;
    t.calls += op.count;
    t.per_call_s = t.calls > 0 ? total / t.calls : 0;
  }
  return out;
}

const json* pass_ops(const json& report, const std::string& phase) {
  if (!report.contains("inference")) return nullptr;
  const json& inf = report["inference"];
  if (!inf.is_object() || !inf.contains(phase) || !inf[phase].is_object() || !inf[phase].contains("ops")) return nullptr;
  return &inf[phase]["ops"];
}

}  // namespace

std::string strip_layer_prefix(const std::string& name) {
  const std::size_t n = op_names::kLayerPrefix.size();  // "layer" + N + "." (models/op_names.hpp)
  if (name.rfind(op_names::kLayerPrefix, 0) != 0) return name;
  std::size_t i = n;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  if (i == n || i >= name.size() || name[i] != '.') return name;
  return name.substr(i + 1);
}

OpTimes simulated_op_times(const json& report) {
  const json* ops = report.contains("time") ? &report["time"] : nullptr;
  if (!ops || !ops->contains("ops") || !(*ops)["ops"].is_array())
    throw std::invalid_argument("simulated report: time.ops is missing or not a list");
  OpTimes out = simulated_list((*ops)["ops"], "simulated report: time.ops");
  // Step-level parts the simulator prices outside the layers, under the executor's names
  // (a const json's operator[] on a missing key is undefined behaviour: ASan's debug build caught it)
  if (!ops->contains("breakdown")) return out;
  const TimeBreakdown b = read_time_breakdown((*ops)["breakdown"], "simulated report: time.breakdown");
  for (const auto& [member, name] : kBreakdownOps)
    if (b.*member > 0 && !out.count(name)) out[name] = {1, b.*member};
  return out;
}

OpTimes measured_op_times(const json& report) {
  if (!report.contains("ops") || !report["ops"].is_object())
    throw std::invalid_argument("measured report: ops is missing or not a mapping");
  return measured_map(report["ops"], OpUnit::step, "measured report: ops");
}

bool has_pass_ops(const json& report, const std::string& phase) { return pass_ops(report, phase) != nullptr; }

OpTimes simulated_pass_op_times(const json& report, const std::string& phase) {
  const json* ops = pass_ops(report, phase);
  if (!ops || !ops->is_array())
    throw std::invalid_argument("simulated report: inference." + phase + ".ops is missing or not a list");
  return simulated_list(*ops, "simulated report: inference." + phase + ".ops");
}

OpTimes measured_pass_op_times(const json& report, const std::string& phase) {
  const json* ops = pass_ops(report, phase);
  if (!ops || !ops->is_object())
    throw std::invalid_argument("measured report: inference." + phase + ".ops is missing or not a mapping");
  return measured_map(*ops, OpUnit::pass, "measured report: inference." + phase + ".ops");
}

std::string op_category(const std::string& name) {
  const std::string bare = strip_layer_prefix(name);
  const std::size_t first = bare.find('.'), last = bare.rfind('.');
  if (first == std::string::npos) return bare;
  const std::string module = bare.substr(0, first);
  // the passes a category table shows: forward, backward (dgrad and wgrad together), recompute
  using op_names::OpPass, op_names::pass_name;
  std::string pass = bare.substr(last + 1);
  if (pass == pass_name(OpPass::bwd_dgrad) || pass == pass_name(OpPass::bwd_wgrad)) pass = "bwd";
  if (pass != pass_name(OpPass::fwd) && pass != "bwd" && pass != pass_name(OpPass::recompute)) return module;
  return module + " " + pass;
}

}  // namespace twinsim::compare
