#pragma once
// A simulated report (`twinsim simulate --json`) lined up with a measured one
// (`twinsim run`'s measured.json): step time, per op, per op category and memory per
// category, each with its absolute and relative error. For an inference scenario (the
// simulated report has `inference` and no `time`) the times are TTFT (the prefill pass)
// and TPOT (one decode pass), and the ops are compared per pass of each phase.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "compare/error.hpp"
#include "compare/op_times.hpp"

namespace twinsim::compare {

struct OpRow {
  std::string name;      // without the layer prefix: "attn.qkv.fwd"
  double calls = 0;      // per step on one GPU (the simulator's count); inference: per pass
  Pair per_call_s;
  Pair per_step_s;       // per_call * calls, on both sides: the op's share of the step (inference: of the pass)
  bool predicted_only = false, measured_only = false;
};

struct NamedPair {
  std::string name;
  Pair value;
};

// The ops of one inference phase, per pass (OpRow::per_step_s is per pass here).
struct PassComparison {
  std::vector<OpRow> ops;               // largest |per-pass gap| first
  std::vector<NamedPair> op_categories; // per-pass seconds, largest gap first
};

struct InferenceComparison {
  Pair ttft_s;                    // the prefill pass, first token of every sequence
  Pair tpot_s;                    // one decode pass (simulated: their mean; measured: their median)
  Pair output_tokens_per_s;
  Pair kv_cache_bytes_per_token;
  PassComparison prefill;         // empty when either side has no inference.prefill.ops
  PassComparison decode;          // the mean decode pass
};

struct Comparison {
  Pair step_s;                          // training; 0 against 0 for inference
  std::vector<OpRow> ops;               // largest |per-step gap| first (training)
  std::vector<NamedPair> op_categories; // "attn fwd", "mlp bwd", ...: per-step seconds, largest gap first
  Pair peak_bytes;
  std::vector<NamedPair> memory;        // params, grads, optimizer, activations, kv_cache, buffers
  // ZeRO-Offload's optimizer states in host memory (plan.offload_optimizer), when either side
  // has any: the simulated memory.host_bytes against the measured memory.host_breakdown.optimizer
  // (the executor's transient host copies of gradients and weights are the breakdown's others)
  std::optional<Pair> host_optimizer_bytes;
  // plan.offload_device: nvme: what one GPU's offloaded state takes on the node's drives,
  // when either side has any (a measured report has none: the executor does not offload there)
  std::optional<Pair> nvme_bytes;
  std::optional<InferenceComparison> inference;  // set for inference reports

  // The one time a run is judged by: the step for training, TPOT for inference.
  const Pair& step_or_tpot_s() const { return inference ? inference->tpot_s : step_s; }
  const char* step_or_tpot_name() const { return inference ? "TPOT" : "step"; }
};

// Throws std::invalid_argument naming the missing key.
Comparison compare_reports(const nlohmann::json& simulated, const nlohmann::json& measured);

nlohmann::json to_json(const Comparison& c);

// Human-readable tables: step, memory, categories, then the `top_ops` ops with the largest gap
// (inference: TTFT, TPOT, throughput and KV bytes per token, memory, then categories and
// ops of the prefill pass and of the mean decode pass).
// The table's two value columns: "predicted" and "measured", or the names of two
// simulated reports (`twinsim compare A.json B.json --labels after,before`); the error
// column is always (first - second) / second.
struct ColumnLabels {
  std::string a = "predicted", b = "measured";
  std::string difference() const { return a == "predicted" && b == "measured" ? "pred-meas" : a.substr(0, 5) + "-" + b.substr(0, 5); }
};
std::string format_comparison(const Comparison& c, int top_ops = 15, const ColumnLabels& labels = {});

// A report file (simulated or measured JSON); throws std::runtime_error naming the path
// when it cannot be read or is not JSON.
nlohmann::json read_report(const std::string& path);

}  // namespace twinsim::compare
