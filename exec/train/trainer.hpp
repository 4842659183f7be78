#pragma once
// One rank's training loop: its pipeline stage of the model, the schedule over the
// step's micro-batches, the gradient reductions, and the (ZeRO-sharded) optimizer step.
// Every rank of the job constructs one with the same config and calls step() in lockstep.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/model/transformer.hpp"
#include "exec/runtime/data.hpp"
#include "exec/runtime/process_groups.hpp"
#include "exec/runtime/profiler.hpp"
#include "exec/train/mixed_precision.hpp"
#include "exec/train/train_config.hpp"
#include "exec/train/zero.hpp"

namespace twinsim::exec {

struct StepResult {
  double loss = 0;       // mean over the global batch, the same on every rank (summed in double)
  bool skipped = false;  // fp16: an inf/nan grad skipped the update
  float loss_scale = 1;  // the scale this step's backward used
  double seconds = 0;    // slowest rank's wall time
  double grad_norm = 0;  // with training.optimizer.grad_clip: the global norm before clipping
};

// What a checkpoint's state is laid out by: the architecture (the tensors' shapes), the
// plan (which shard each rank holds) and the training's storage and optimizer (which
// states exist, in which precision), as the metadata keys twinsim.model / .plan /
// .training. Resuming or merging under any other is refused, naming which.
std::map<std::string, std::string> job_signature(const TrainConfig& c);

class Trainer {
 public:
  Trainer(const TrainConfig& config, ProcessGroups& groups, const TokenSource& data, Profiler* profiler = nullptr);

  StepResult step();
  int steps_done() const { return steps_done_; }
  TransformerStage& stage() { return *stage_; }

  // This rank's parameters by name as the model uses them (its TP shard of each);
  // a collective over the DP group under ZeRO 3.
  std::map<std::string, std::vector<float>> parameters();

  // Everything a resumed run needs to continue bit-identically: this rank's optimizer
  // state, the steps done (which select the data) and the loss scaler.
  TensorFile save_state();
  void load_state(const TensorFile& file);

 private:
  double grad_norm_ = 0;  // of the last applied update (gradient clipping only)
  const TrainConfig& c_;
  ProcessGroups& groups_;
  const TokenSource& data_;
  Profiler* profiler_;
  std::unique_ptr<TransformerStage> stage_;
  std::unique_ptr<ShardedOptimizer> optimizer_;
  LossScaler scaler_;
  int steps_done_ = 0;

  void load(int micro, MicroBatchState& st) const;
  void finalize_grads();
  bool apply_update();  // false when fp16 overflow skipped it
  // fp32 and bf16 have no loss scaler to skip a step: a NaN or Inf loss or gradient would
  // reach the weights (and the checkpoint), so the step stops before the update, naming the
  // step and the first parameter whose gradient went bad (Megatron checks the grad norm).
  void stop_if_not_finite(double loss);
};

}  // namespace twinsim::exec
