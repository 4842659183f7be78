#include "trust/validation_cases.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "scenario/load.hpp"
#include "sim/common/csv.hpp"
#include "sim/inference/batch_prediction.hpp"
#include "sim/inference/serve_run.hpp"
#include "sim/training/training_report.hpp"
#include "sim/validate/csv_validation.hpp"

namespace twinsim::trust {

namespace {

const std::map<std::string, Metric> kMetrics = {
    {"step_s", Metric::step_s},
    {"hardware_tflops_per_gpu", Metric::hardware_tflops_per_gpu},
    {"mfu", Metric::mfu},
    {"tokens_per_s_per_gpu", Metric::tokens_per_s_per_gpu},
    {"bekman_tflops_per_gpu", Metric::bekman_tflops_per_gpu},
    {"ttft_s", Metric::ttft_s},
    {"tpot_s", Metric::tpot_s},
    {"output_tokens_per_s", Metric::output_tokens_per_s},
    {"offline_output_tokens_per_s", Metric::offline_output_tokens_per_s},
    {"serve_output_tokens_per_s", Metric::serve_output_tokens_per_s},
    {"serve_median_ttft_s", Metric::serve_median_ttft_s},
    {"serve_median_tpot_s", Metric::serve_median_tpot_s},
};

std::string metric_name(Metric m) {
  for (const auto& [name, metric] : kMetrics)
    if (metric == m) return name;
  return "?";
}

// A rate's error read as a time's: a throughput 10% high is a time 9.1% short.
bool is_rate(Metric m) {
  return m != Metric::step_s && m != Metric::ttft_s && m != Metric::tpot_s && m != Metric::serve_median_ttft_s &&
         m != Metric::serve_median_tpot_s;
}

constexpr std::string_view kClientRate = "client.rate=";  // ValidationCase::client_rate_per_s
constexpr std::string_view kClientConcurrency = "client.max_concurrency=";  // ValidationCase::client_max_concurrency
constexpr std::string_view kClientNumpyVocab = "client.numpy_tokenizer_vocab=";  // ::client_numpy_tokenizer_vocab
constexpr std::string_view kClientServerPrompt = "client.server_prompt_len=";    // ::client_server_prompt_len

// Reads a client.* item of the overrides cell into `c`; false for a scenario override.
bool read_client_item(const std::string& item, const std::string& where, ValidationCase& c) {
  const bool rate = item.starts_with(kClientRate), cap = item.starts_with(kClientConcurrency);
  const bool vocab = item.starts_with(kClientNumpyVocab), server = item.starts_with(kClientServerPrompt);
  if (!rate && !cap && !vocab && !server) return false;
  const std::string text = item.substr(item.find('=') + 1);
  // client.rate=inf: every request sent at once (the benchmarks' default --request-rate)
  const std::optional<double> value = rate && text == "inf" ? std::numeric_limits<double>::infinity() : parse_number(text);
  if (!value || *value <= 0 || (!rate && *value != std::floor(*value)))
    throw std::runtime_error(where + ": column overrides: '" + item + "' is not a positive " + (rate ? "rate" : "whole number"));
  if (rate) c.client_rate_per_s = *value;
  else if (cap) c.client_max_concurrency = static_cast<std::int64_t>(*value);
  else if (vocab) c.client_numpy_tokenizer_vocab = static_cast<std::int64_t>(*value);
  else c.client_server_prompt_len = static_cast<std::int64_t>(*value);
  return true;
}

std::vector<std::string> split_overrides(const std::string& cell) {
  std::vector<std::string> out;
  std::stringstream ss(cell);
  for (std::string item; std::getline(ss, item, ';');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// The predicted figure of a training case, in its metric's units; `extrapolated` set where an
// op was priced beyond the measured tables.
double predicted_training(const Scenario& s, Metric m, bool& extrapolated) {
  const TrainingPrediction p = predict_training(s);
  for (const OpPrediction& op : p.ops) extrapolated = extrapolated || op.extrapolated;
  switch (m) {
    case Metric::step_s: return p.step_s;
    case Metric::hardware_tflops_per_gpu: return p.throughput.hardware_tflops_per_gpu;
    case Metric::mfu: return p.throughput.mfu;
    case Metric::tokens_per_s_per_gpu: return p.throughput.tokens_per_s_per_gpu;
    case Metric::bekman_tflops_per_gpu:  // one sequence per GPU, each step
      return bekman_model_flops(s.model, static_cast<double>(s.training->seq_len)) *
             static_cast<double>(s.training->global_batch) / static_cast<double>(s.plan.world_size()) / p.step_s / 1e12;
    default: throw std::invalid_argument("metric " + metric_name(m) + " is not a training step's");
  }
}

double predicted_online(const Scenario& s, const ValidationCase& c) {
  if (c.client_rate_per_s <= 0) throw std::invalid_argument(c.name + ": metric " + metric_name(c.metric) + " needs client.rate=R");
  const BenchMetrics b = run_online_benchmark(s, c.client_rate_per_s, c.client_max_concurrency,
                                              c.client_numpy_tokenizer_vocab, c.client_server_prompt_len)
                             .bench;
  if (c.metric == Metric::serve_median_ttft_s) return b.ttft.median_s;
  if (c.metric == Metric::serve_median_tpot_s) return b.tpot.median_s;
  return b.output_throughput;
}

double predicted_serving(const Scenario& s, const ValidationCase& c) {
  const Metric m = c.metric;
  if (m == Metric::offline_output_tokens_per_s) return run_offline_benchmark(s).summary.output_tokens_per_s;
  if (m == Metric::serve_output_tokens_per_s || m == Metric::serve_median_ttft_s || m == Metric::serve_median_tpot_s)
    return predicted_online(s, c);
  const InferencePrediction p = predict_inference(s);
  switch (m) {
    case Metric::ttft_s: return p.ttft_s;
    case Metric::tpot_s: return p.tpot_s;
    case Metric::output_tokens_per_s: return p.output_tokens_per_s;
    default: throw std::invalid_argument("metric " + metric_name(m) + " is not a serving run's");
  }
}

// vTrain's held-out rows (the odd ones: megatron-eager's host figures were fitted on the even
// rows), each a case of its own, measured in seconds a step.
void add_vtrain_rows(const ValidationCase& c, const std::string& csv, std::vector<CaseError>& out) {
  const std::vector<VtrainRow> rows = select_half(read_vtrain_csv(csv), "odd");
  const std::vector<Scenario> scenarios =
      vtrain_scenarios(rows, catalog_cluster("dgx-a100-80gb"), catalog_stack(kVtrainStack));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ValidationCase row = c;
    row.measured = rows[i].measured_s;
    out.push_back(case_error(row, scenarios[i], "vtrain-row-" + std::to_string(rows[i].index)));
  }
}

}  // namespace

double bekman_model_flops(const ModelSpec& m, double seq) {
  const double q = static_cast<double>(m.heads) * m.head_dim, kv = static_cast<double>(m.kv_heads) * m.head_dim;
  const double per_layer = 3.0 * m.hidden * m.ffn_hidden + m.hidden * (2 * q + 2 * kv);
  const double dense = per_layer * m.layers + static_cast<double>(m.vocab) * m.hidden;
  return 6 * dense * seq + 6 * seq * seq * m.head_dim * m.heads * m.layers;
}

CaseError case_error(const ValidationCase& c, const Scenario& s, const std::string& name) {
  CaseError e;
  e.name = name;
  e.source = c.source;
  e.metric = metric_name(c.metric);
  e.regime = regime_of(s);
  e.gpus = static_cast<long long>(s.plan.world_size());
  e.predicted = s.is_training() ? predicted_training(s, c.metric, e.extrapolated) : predicted_serving(s, c);
  e.measured = c.measured;
  const double ratio = e.predicted / e.measured;
  e.log_ratio = is_rate(c.metric) ? -std::log(ratio) : std::log(ratio);
  return e;
}

std::vector<ValidationCase> read_validation_cases(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  std::vector<ValidationCase> cases;
  std::string line;
  std::getline(in, line);  // name,scenario,overrides,metric,measured,role,source
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> cells = split_csv_line(line);
    const std::string where = path + " line " + std::to_string(n);
    if (cells.size() != 7) throw std::runtime_error(where + ": " + std::to_string(cells.size()) + " columns, expected 7");
    ValidationCase c;
    c.name = cells[0];
    c.scenario = cells[1];
    for (std::string& item : split_overrides(cells[2]))
      if (!read_client_item(item, where, c)) c.overrides.push_back(std::move(item));
    const auto metric = kMetrics.find(cells[3]);
    if (metric == kMetrics.end()) throw std::runtime_error(where + ": column metric: '" + cells[3] + "' is not a metric");
    c.metric = metric->second;
    const std::optional<double> measured = parse_number(cells[4]);
    if (!measured || *measured <= 0) throw std::runtime_error(where + ": column measured: '" + cells[4] + "' is not a positive number");
    c.measured = *measured;
    if (cells[5] != "held_out" && cells[5] != "fitted")
      throw std::runtime_error(where + ": column role: '" + cells[5] + "' is neither held_out nor fitted");
    c.held_out = cells[5] == "held_out";
    c.source = cells[6];
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<CaseError> run_validation_cases(const std::vector<ValidationCase>& cases, const std::string& scenarios_dir) {
  std::vector<CaseError> out;
  for (const ValidationCase& c : cases) {
    if (!c.held_out) continue;  // a fitted case cannot judge the figure fitted to it
    const std::string path = scenarios_dir + "/" + c.scenario;
    if (c.scenario.ends_with(".csv"))
      add_vtrain_rows(c, path, out);
    else
      out.push_back(case_error(c, load_scenario_file(path, c.overrides), c.name));
  }
  return out;
}

}  // namespace twinsim::trust
