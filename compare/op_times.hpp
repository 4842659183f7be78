#pragma once
// Per-op times of a report, in one shape whichever side wrote them.
//
//  * the simulator (`time.ops`): a list of {name: "attn.qkv.fwd", time_s: one layer and
//    micro-batch, count: runs per step on the reported GPU};
//  * the executor (`ops`): a map {"layer3.attn.qkv.fwd": {count_per_step, mean_s_per_step}},
//    per layer, averaged over the ranks that ran it.
//
// Both become {op name without the layer prefix: calls per step, seconds per call}. The
// simulator's `time.breakdown.optimizer_s` and `dp_comm_exposed_s` become the executor's
// one-per-step ops `optimizer.step` and `dp.grad_reduce`.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace twinsim::compare {

struct OpTime {
  double calls = 0;     // per step on one GPU
  double per_call_s = 0;
  double total_s() const { return calls * per_call_s; }
};

using OpTimes = std::map<std::string, OpTime>;

// "layer12.mlp.fc1.fwd" -> "mlp.fc1.fwd"; other names unchanged.
std::string strip_layer_prefix(const std::string& name);

// Throws std::invalid_argument naming the key when the report has no per-op times.
OpTimes simulated_op_times(const nlohmann::json& report);
OpTimes measured_op_times(const nlohmann::json& report);

// The category an op counts under: its module ("attn", "mlp", "head", ...) and pass
// ("fwd", "bwd", "recompute"), e.g. "mlp fwd".
std::string op_category(const std::string& name);

}  // namespace twinsim::compare
