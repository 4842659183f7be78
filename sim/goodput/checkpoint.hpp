#pragma once
// What one checkpoint of a training plan weighs and how long the cluster takes to write and
// read it back (sim/goodput/README.md, "Checkpoint").
#include <cstdint>

#include "hardware/reliability.hpp"
#include "scenario/scenario.hpp"

namespace twinsim {

struct CheckpointCost {
  double bytes = 0;            // the whole model's state, every shard once
  double shard_bytes = 0;      // what one GPU writes: bytes / GPUs (sharded checkpointing)
  double blocking_s = 0;       // the training stall per checkpoint
  double write_s = 0;          // until the checkpoint is durable on storage
  double read_s = 0;           // loading it back on a restart
};

// The state a restart needs: the model's weights and the optimizer's states (master, Adam's
// moments, in plan.exp_avg_dtype ...'s types), as the memory model counts them per parameter
// (training_bytes_per_param), once per parameter however
// the plan replicates them; gradients are not kept.
double checkpoint_bytes(const Scenario& s);

// Sharded checkpointing (Megatron's distributed checkpoint, PyTorch DCP): every GPU writes
// 1/GPUs of the state at once, so the write takes bytes / the storage's aggregate bandwidth;
// a restart reads it back the same way. Asynchronous: the step stalls only while each GPU
// copies its shard to host memory over its PCIe link (cluster.host.d2h_GBps); synchronous:
// for the whole write.
CheckpointCost checkpoint_cost(const Scenario& s, const GoodputSpec& spec);

}  // namespace twinsim
