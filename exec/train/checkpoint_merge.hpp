#pragma once
// `twinsim checkpoint merge`: the whole model from a run's per-rank checkpoint files.
//
// A rank's file holds each of its parameter blocks as one flat tensor: the block's
// parameters one after another (each its TP shard), padded to a multiple of the DP degree,
// and under ZeRO the rank's contiguous DP share of it (ZeRO-3: of the parameters; ZeRO 1-3:
// of the fp32 masters and Adam moments). Merging walks the same layout the run built
// (stage_block_specs, the plan's rank order tp-cp-dp-pp), joins the DP shares, cuts each
// parameter out and joins its TP shards into the full [rows, cols] matrix (a vector: [n]).
#include <string>

#include "exec/runtime/checkpoint.hpp"
#include "exec/train/checkpoint_dir.hpp"
#include "exec/train/train_config.hpp"

namespace twinsim::exec {

enum class MergedNames {
  twinsim,      // the executor's own names: "layer0.attn.q.weight"
  huggingface,  // transformers' GPT-2 / Llama keys (hf_names.hpp); refused for other models
};

struct MergeOptions {
  MergedNames names = MergedNames::twinsim;
  // Also the fp32 master weights (mixed precision) and optimizer states, as "<name>.master",
  // "<name>.exp_avg", "<name>.exp_avg_sq" (Adam) or "<name>.momentum_buffer" (SGD), under
  // either naming (GPT-2's Conv1D states transposed as its weights)
  bool optimizer = false;
};

// The model after `step` steps of the run `config` describes (its scenario), from `dir`.
// Parameters keep the run's storage type (F32, BF16 or F16). Throws CheckpointError naming
// the file when one is missing, corrupt or written by another job or plan.
TensorFile merge_checkpoint(const TrainConfig& config, const CheckpointDir& dir, int step, const MergeOptions& options);

}  // namespace twinsim::exec
