#pragma once
// Loading scenarios (SCENARIO.md): a file or text, plus `--set key=value` overrides,
// into a validated Scenario. Every rejection is a ScenarioError naming key, value, rule.
#include <map>
#include <string>
#include <vector>

#include "scenario/errors.hpp"
#include "scenario/scenario.hpp"

namespace twinsim {

// Reads a scenario file (YAML, or JSON which is YAML too) and applies overrides
// of the form "plan.tp=4" in order.
Scenario load_scenario_file(const std::string& path, const std::vector<std::string>& overrides = {});

// Same, from text already in memory; `origin` names it in messages.
Scenario load_scenario_text(const std::string& text, const std::vector<std::string>& overrides = {},
                            const std::string& origin = "<scenario>");

// The scenario's keys after the overrides, each value as written, by dotted path
// ("plan.tp" -> "8", "plan.stage_layers[1]" -> "4"); the built-in default when `path` is
// "". Nothing is validated: the processes of one MPI job compare these before their work.
std::map<std::string, std::string> scenario_keys(const std::string& path, const std::vector<std::string>& overrides);

// The scenario text (YAML or JSON) with one `--set KEY=VALUE` applied as the loader
// applies it (a catalog name under `model`, `cluster`, `cluster.gpu` or `stack` becomes
// `{preset: NAME}` to set a key inside), as YAML text; nothing is validated yet. Python's
// Scenario.set goes through it, so both edit scenarios by one set of rules.
std::string scenario_text_with_override(const std::string& text, const std::string& assignment);

// Catalog lookups; unknown names throw ScenarioError with a "did you mean" hint.
ModelSpec catalog_model(const std::string& name);
// A Hugging Face config.json file (as `model: {hf_config: FILE}`), else a catalog name.
ModelSpec load_model(const std::string& file_or_name);
// A `model:` section given as YAML or JSON text: an inline mapping, `{preset: ...}` or
// `{hf_config: FILE or the config itself}`; `origin` names it in messages.
ModelSpec load_model_text(const std::string& text, const std::string& origin = "model");
GpuSpec catalog_gpu(const std::string& name);
ClusterSpec catalog_node(const std::string& name);  // nodes = 1
// A catalog node type with as many nodes as the plan needs (`cluster: NAME`, nodes 0).
ClusterSpec catalog_cluster(const std::string& name);
// The catalog node type whose GPU is `gpu` (a catalog GPU name), one written out whole first
// (dgx-h100 rather than aws-p5, whose file starts from it), then the shorter name, as
// catalog_cluster gives it; ScenarioError when none.
ClusterSpec catalog_cluster_for_gpu(const std::string& gpu);
// A catalog software stack (`stack: NAME`).
StackSpec catalog_stack(const std::string& name);
// A cluster or stack a user wrote on a command line: a catalog name or a YAML flow mapping
// (`{preset: dgx-a100-80gb, intra_node: {bandwidth_GBps: 150}}`), read as that section of
// a scenario file; `origin` names it in messages (e.g. "--cluster").
ClusterSpec cluster_from_text(const std::string& text, const std::string& origin);
StackSpec stack_from_text(const std::string& text, const std::string& origin);
// `inference.speculative` written on a command line as a YAML flow mapping
// (`{method: draft, draft_model: llama3.2-1b, tokens: 4, acceptance_rate: 0.7}`).
SpeculativeDecoding speculative_from_text(const std::string& text, const std::string& origin);

std::vector<std::string> catalog_model_names();
std::vector<std::string> catalog_gpu_names();
std::vector<std::string> catalog_node_names();

// The built-in default scenario (GPT-3 175B on DGX A100, Narayanan et al. 2021).
std::string default_scenario_text();

}  // namespace twinsim
