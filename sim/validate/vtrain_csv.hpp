#pragma once
// The vTrain ground-truth table (Bang et al., "vTrain", MICRO 2024; repository
// VIA-Research/vTrain, data/ground_truth_single.csv): measured Megatron-DeepSpeed
// iteration times of GPT models on 2-8 A100s of one node, one run per row.
#include <string>
#include <vector>

#include "scenario/scenario.hpp"

namespace twinsim {

struct VtrainRow {
  int index = 0;  // 0-based data row in file order: "even" and "odd" halves split on it
  int gpus = 0;
  int global_batch = 0, micro_batch = 0;
  int hidden = 0, heads = 0, layers = 0, seq_len = 0;
  int tp = 0, dp = 0, pp = 0;
  double measured_s = 0;  // the CSV gives milliseconds
};

// Reads the CSV (header line first, 11 columns); a malformed line throws
// std::runtime_error naming the line and the column.
std::vector<VtrainRow> read_vtrain_csv(const std::string& path);
std::vector<VtrainRow> parse_vtrain_csv(const std::string& text, const std::string& origin);

// Megatron pads the GPT-2 vocabulary (50,257) to a multiple of 128 x tp
// (megatron/tokenizer/tokenizer.py, _vocab_size_with_padding, --make-vocab-size-divisible-by 128).
std::int64_t megatron_padded_vocab(std::int64_t vocab, int tp);

// The software vTrain measured: Megatron-DeepSpeed in PyTorch eager mode.
inline constexpr const char* kVtrainStack = "megatron-eager";

// The scenario of one row on `cluster` under `stack`: the setup vTrain's README and
// configs describe, built from typed parts (scenario/build.hpp).
Scenario vtrain_scenario(const VtrainRow& row, const ClusterSpec& cluster, const StackSpec& stack);

}  // namespace twinsim
