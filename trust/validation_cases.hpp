#pragma once
// The validation cases the trust intervals are made of (scenarios/validation/cases.csv): each a
// published or measured run, its scenario, the figure measured and whether a catalog figure
// was fitted to it. `run_validation_cases` predicts the held-out ones and returns their errors
// (sim/trust/case_errors.hpp); `twinsim trust-table` writes them to sim/trust/case_errors.csv,
// and tests/unit/trust checks that the committed file is what the simulator predicts today.
#include <string>
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/trust/case_errors.hpp"

namespace twinsim::trust {

// What a case's measured figure is, and so how the prediction is read against it.
enum class Metric {
  step_s,                   // seconds a training step
  hardware_tflops_per_gpu,  // throughput.hardware_tflops_per_gpu (recompute counted)
  mfu,                      // throughput.mfu
  tokens_per_s_per_gpu,     // throughput.tokens_per_s_per_gpu
  bekman_tflops_per_gpu,    // S. Bekman's benchmark.py TFLOP/s (bekman_model_flops)
  ttft_s,
  tpot_s,
  output_tokens_per_s,
  // `serve` of inference.batch requests all at t = 0 (run_offline_benchmark): an engine's
  // offline throughput benchmark (trtllm-bench throughput, `vllm bench throughput`)
  offline_output_tokens_per_s,
  // `serve` of inference.batch requests arriving at the case's client rate (run_online_benchmark:
  // Poisson, fixed lengths), as `vllm bench serve` and SGLang's bench_serving run them: output
  // throughput, median TTFT and median TPOT by their definitions (sim/inference/bench_report)
  serve_output_tokens_per_s,
  serve_median_ttft_s,
  serve_median_tpot_s,
};

struct ValidationCase {
  std::string name;
  std::string scenario;                // under scenarios/validation/ (or vTrain's CSV: every held-out row)
  std::vector<std::string> overrides;  // --set KEY=VALUE, ';'-separated in the file
  // the serve_* metrics' benchmark client: its --request-rate, given in the overrides cell as
  // client.rate=R (not a scenario key: read off before the scenario loads)
  double client_rate_per_s = 0;
  // and its --max-concurrency, client.max_concurrency=N (0: none; with client.rate=inf the
  // client keeps N requests in flight)
  std::int64_t client_max_concurrency = 0;
  // and its request set as vLLM's 2025 benchmark_serving.py drew it with numpy over a tokenizer of
  // V tokens, client.numpy_tokenizer_vocab=V (0: this project's own Poisson draws)
  std::int64_t client_numpy_tokenizer_vocab = 0;
  // and, with those draws, each prompt's length as the server re-tokenizes the decoded ids,
  // client.server_prompt_len=N (the mean scripts/random_prompt_server_tokens.py prints; 0: the
  // scenario's prompt_len)
  std::int64_t client_server_prompt_len = 0;
  Metric metric = Metric::step_s;
  double measured = 0;
  bool held_out = true;                // role "held_out"; "fitted": a catalog figure was fitted to it
  std::string source;
};

// Reads cases.csv; a malformed line throws std::runtime_error naming the line and the column.
std::vector<ValidationCase> read_validation_cases(const std::string& path);

// One case's error with `s` its scenario as loaded (tests/unit/validation/no_stack_judges_test.cpp
// predicts each judge with its stack replaced by the default); `name` as the table names it.
CaseError case_error(const ValidationCase& c, const Scenario& s, const std::string& name);

// Predicts every held-out case (scenario paths under `scenarios_dir`, the repository's scenarios/) and returns its error.
std::vector<CaseError> run_validation_cases(const std::vector<ValidationCase>& cases, const std::string& scenarios_dir);

// S. Bekman's model FLOPs per sequence of `seq` tokens (ml-engineering benchmark.py,
// estimate_tflos): 6 x (dense parameters + vocabulary x hidden) per token and causal attention
// as 6 s^2 x head width x heads x layers, recompute excluded.
double bekman_model_flops(const ModelSpec& m, double seq);

}  // namespace twinsim::trust
