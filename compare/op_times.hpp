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
//
// Inference reports keep their ops per phase, `inference.prefill.ops` and
// `inference.decode.ops`, in the same two shapes with "per pass" for "per step": the
// simulator's list of {name, time_s: one call, count: calls per pass}, the executor's
// map {"layer3.attn.qkv.fwd": {count_per_pass, mean_s_per_pass}}.
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

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

// An inference report's ops of `phase` ("prefill" or "decode"), per pass; throws
// std::invalid_argument naming the key when they are missing.
OpTimes simulated_pass_op_times(const nlohmann::json& report, const std::string& phase);
OpTimes measured_pass_op_times(const nlohmann::json& report, const std::string& phase);
// Whether the report has inference.<phase>.ops.
bool has_pass_ops(const nlohmann::json& report, const std::string& phase);

// The category an op counts under: its module ("attn", "mlp", "head", ...) and pass
// ("fwd", "bwd", "recompute"), e.g. "mlp fwd".
std::string op_category(const std::string& name);

}  // namespace twinsim::compare
