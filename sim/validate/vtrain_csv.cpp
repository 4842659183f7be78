#include "sim/validate/vtrain_csv.hpp"

#include "sim/common/csv.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "scenario/load.hpp"

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
  if (v != static_cast<int>(v))
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

Scenario vtrain_scenario(const VtrainRow& r, const std::string& cluster_yaml, const std::string& stack_yaml) {
  // vTrain's validation setup (data/README.md of this project; vTrain configs under
  // config/: "use_gradient_bucket": false, "use_checkpoint": true, "pipeline_scheduling":
  // "1f1b"): GPT with 4h FFN, GeLU, LayerNorm, learned positions, tied embeddings;
  // Megatron's default dropout 0.1 (--hidden-dropout, --attention-dropout); fp16 + Adam;
  // full recompute; no FlashAttention (Megatron-DeepSpeed's default attention path).
  std::ostringstream y;
  y << "name: vtrain-row-" << r.index << "\n"
    << "model: {layers: " << r.layers << ", hidden: " << r.hidden << ", heads: " << r.heads
    << ", activation: gelu, norm: layernorm, vocab: " << megatron_padded_vocab(50257, r.tp)
    << ", position: learned, max_seq_len: " << r.seq_len
    << ", tied_embeddings: true, bias: true, dropout: 0.1}\n"
    << "cluster: " << cluster_yaml << "\n"
    << "stack: " << stack_yaml << "\n"
    << "training: {seq_len: " << r.seq_len << ", global_batch: " << r.global_batch
    << ", micro_batch: " << r.micro_batch << ", precision: fp16, optimizer: adam}\n"
    << "plan: {tp: " << r.tp << ", pp: " << r.pp << ", dp: " << r.dp
    << ", sequence_parallel: false, zero: 0, recompute: full, schedule: 1f1b,"
    << " flash_attention: false, overlap_grad_reduce: false}\n";
  return load_scenario_text(y.str(), {}, "vtrain row " + std::to_string(r.index));
}

}  // namespace twinsim
