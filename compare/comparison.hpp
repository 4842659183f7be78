#pragma once
// A simulated report (`twinsim simulate --json`) lined up with a measured one
// (`twinsim run`'s measured.json): step time, per op, per op category and memory per
// category, each with its absolute and relative error.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/error.hpp"
#include "compare/op_times.hpp"

namespace twinsim::compare {

struct OpRow {
  std::string name;      // without the layer prefix: "attn.qkv.fwd"
  double calls = 0;      // per step on one GPU (the simulator's count)
  Pair per_call_s;
  Pair per_step_s;       // per_call * calls, on both sides: the op's share of the step
  bool predicted_only = false, measured_only = false;
};

struct NamedPair {
  std::string name;
  Pair value;
};

struct Comparison {
  Pair step_s;
  std::vector<OpRow> ops;               // largest |per-step gap| first
  std::vector<NamedPair> op_categories; // "attn fwd", "mlp bwd", ...: per-step seconds, largest gap first
  Pair peak_bytes;
  std::vector<NamedPair> memory;        // params, grads, optimizer, activations, kv_cache, buffers
};

// Throws std::invalid_argument naming the missing key.
Comparison compare_reports(const nlohmann::json& simulated, const nlohmann::json& measured);

nlohmann::json to_json(const Comparison& c);

// Human-readable tables: step, memory, categories, then the `top_ops` ops with the largest gap.
std::string format_comparison(const Comparison& c, int top_ops = 15);

}  // namespace twinsim::compare
