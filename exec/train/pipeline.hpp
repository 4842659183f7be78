#pragma once
// Pipeline schedules over the micro-batches of one step (Megatron-core
// schedules.py, forward_backward_pipelining_without_interleaving):
//   GPipe (Huang et al. 2019): every forward, then every backward;
//   1F1B (Narayanan et al. 2021 §2.2, PipeDream-Flush): stage s runs pp - s - 1 warm-up
//     forwards, then alternates one forward and one backward, then drains the backwards,
//     so at most pp - s micro-batches keep their activations at once.
// Neighbouring stages exchange activations (forward) and their grads (backward) with
// point-to-point sends on the pipeline group; the steady-state exchanges pair a send
// with a receive in one call, as Megatron batches isend/irecv, so no two stages wait on
// each other.
#include <functional>
#include <vector>

#include "exec/model/transformer.hpp"
#include "exec/runtime/communicator.hpp"
#include "models/plan.hpp"

namespace twinsim::exec {

struct PipelineRun {
  TransformerStage& stage;
  ModelContext ctx;
  Communicator& pp;  // ranks are stage indices
  int micro_batches = 1;
  float dloss = 1.0f;  // the grad each micro-batch's loss enters backward with
  // fills tokens (first stage) and targets (last stage) of micro-batch i
  std::function<void(int, MicroBatchState&)> load;
};

// Runs every micro-batch forward and backward; returns the last stage's losses
// (empty elsewhere), in micro-batch order.
std::vector<float> run_pipeline(Schedule schedule, PipelineRun& run);

}  // namespace twinsim::exec
