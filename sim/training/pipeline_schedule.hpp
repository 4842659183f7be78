#pragma once
// The order in which one pipeline stage runs its forward and backward passes.
//
//  * GPipe (Huang et al. 2019): all forwards, then all backwards.
//  * 1F1B (Narayanan et al. 2021 §2.2.1, PipeDream-Flush): stage i warms up with
//    pp - i - 1 forwards, then alternates one forward and one backward, then drains.
//  * Interleaved 1F1B (Narayanan et al. 2021 §2.2.2): each stage holds v model chunks;
//    the order follows Megatron-LM's schedules.py (forward_backward_pipelining_with_
//    interleaving): warm-up (pp - i - 1) * 2 + (v - 1) * pp chunk-forwards.
//  * DualPipe (DeepSeek-V3 report §3.2.1): sim/training/dualpipe_schedule.hpp.
#include <vector>

#include "models/plan.hpp"

namespace twinsim {

struct PipelineSlot {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;  // model chunk (virtual stage) on this pipeline stage; 0 without interleaving
  // DualPipe: runs beside its neighbour as one overlapped forward-and-backward pair
  bool overlapped = false;
};

// The program order of `stage`'s compute stream for one training step. `extra_warmup`: forwards
// the 1F1B schedules warm up with beyond their own (Megatron-core's EP all-to-all overlap adds
// one: schedules.py, num_warmup_microbatches += 1, so each steady-state forward runs beside the
// backward of another micro-batch; sim/training/ep_overlap.hpp).
std::vector<PipelineSlot> stage_schedule(Schedule schedule, int pp, int stage, int micro_batches, int virtual_stages,
                                         int extra_warmup = 0);

// Largest number of micro-batch activations (in chunk units) alive at once on the stage,
// read off the order: forwards not yet matched by their backward.
int peak_in_flight(const std::vector<PipelineSlot>& order);

}  // namespace twinsim
