#include "sim/validate/vtrain_csv.hpp"

#include "sim/common/csv.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "scenario/build.hpp"
#include "scenario/errors.hpp"

namespace twinsim {

namespace {

constexpr int kColumns = 11;
const char* const kColumnNames[kColumns] = {"GPUs", "global batch", "micro batch", "hidden size",
                                            "attention heads", "# layers", "sequence length",
                                            "tensor parallelism", "data parallelism",
                                            "pipeline parallelism", "iteration time (ms)"};

double number(const std::string& cell, const std::string& where, int column) {
  const std::optional<double> v = parse_number(cell);
  if (!v || !(*v > 0))
    throw std::runtime_error(where + ": column '" + kColumnNames[column] + "' = '" + cell +
                             "' is not a positive number");
  return *v;
}

int integer(const std::string& cell, const std::string& where, int column) {
  const double v = number(cell, where, column);
  constexpr int kLargest = std::numeric_limits<int>::max();
  if (v > kLargest)
    throw std::runtime_error(where + ": column '" + kColumnNames[column] + "' = '" + cell + "' is too large (at most " +
                             std::to_string(kLargest) + ")");
  if (v != std::floor(v))
    throw std::runtime_error(where + ": column '" + kColumnNames[column] + "' = '" + cell + "' is not an integer");
  return static_cast<int>(v);
}

VtrainRow parse_row(const std::vector<std::string>& c, const std::string& where, int index) {
  VtrainRow r;
  r.index = index;
  int* ints[] = {&r.gpus, &r.global_batch, &r.micro_batch, &r.hidden, &r.heads,
                 &r.layers, &r.seq_len, &r.tp, &r.dp, &r.pp};
  for (int i = 0; i < 10; ++i) *ints[i] = integer(c[i], where, i);
  r.measured_s = number(c[10], where, 10) * 1e-3;
  if (r.tp * r.dp * r.pp != r.gpus)
    throw std::runtime_error(where + ": tensor x data x pipeline parallelism = " +
                             std::to_string(r.tp * r.dp * r.pp) + " is not GPUs = " + std::to_string(r.gpus));
  return r;
}

}  // namespace

std::vector<VtrainRow> parse_vtrain_csv(const std::string& text, const std::string& origin) {
  std::vector<VtrainRow> rows;
  std::stringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line_no == 1) continue;  // the header
    const std::string where = origin + ":" + std::to_string(line_no);
    const std::vector<std::string> cells = split_csv_line(line);
    if (static_cast<int>(cells.size()) != kColumns)
      throw std::runtime_error(where + ": " + std::to_string(cells.size()) + " columns, expected " +
                               std::to_string(kColumns));
    rows.push_back(parse_row(cells, where, static_cast<int>(rows.size())));
  }
  if (rows.empty()) throw std::runtime_error(origin + ": no data rows");
  return rows;
}

std::vector<VtrainRow> read_vtrain_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  return parse_vtrain_csv(text.str(), path);
}

std::int64_t megatron_padded_vocab(std::int64_t vocab, int tp) {
  const std::int64_t multiple = 128LL * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

Scenario vtrain_scenario(const VtrainRow& r, const ClusterSpec& cluster, const StackSpec& stack) {
  // vTrain's validation setup (data/README.md of this project; vTrain configs under
  // config/: "use_gradient_bucket": false, "use_checkpoint": true, "pipeline_scheduling":
  // "1f1b"): GPT with 4h FFN, GeLU, LayerNorm, learned positions, tied embeddings;
  // Megatron's default dropout 0.1 (--hidden-dropout, --attention-dropout); fp16 + Adam;
  // full recompute; no FlashAttention (Megatron-DeepSpeed's default attention path).
  Scenario s;
  s.name = "vtrain-row-" + std::to_string(r.index);
  ModelSpec& m = s.model;
  m.name = "custom";
  m.layers = r.layers, m.hidden = r.hidden, m.heads = r.heads, m.kv_heads = r.heads;
  if (r.heads <= 0 || r.hidden % r.heads != 0)
    throw ScenarioError("vtrain row " + std::to_string(r.index) + " heads", std::to_string(r.heads),
                        "does not divide hidden=" + std::to_string(r.hidden));
  m.head_dim = r.hidden / r.heads, m.ffn_hidden = 4 * static_cast<std::int64_t>(r.hidden);
  m.activation = Activation::gelu, m.norm = Norm::layernorm, m.position = Position::learned;
  m.vocab = megatron_padded_vocab(50257, r.tp), m.max_seq_len = r.seq_len;
  m.tied_embeddings = true, m.bias = true, m.dropout = 0.1;
  s.cluster = cluster;
  s.stack = stack;
  TrainingWorkload t;
  t.seq_len = r.seq_len, t.global_batch = r.global_batch, t.micro_batch = r.micro_batch;
  t.precision = Dtype::fp16, t.optimizer = Optimizer::adam;
  s.training = t;
  Plan& p = s.plan;
  p.tp = r.tp, p.pp = r.pp, p.dp = r.dp;
  p.sequence_parallel = false, p.zero = 0, p.recompute = Recompute::full, p.schedule = Schedule::one_f_one_b;
  p.flash_attention = false, p.overlap_grad_reduce = false;
  return validated_scenario(s);
}

}  // namespace twinsim
