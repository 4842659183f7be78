#pragma once
// The traffic of offloaded training state between the GPU, CPU memory and the node's NVMe
// drives (plan.offload_params, plan.offload_device): one home for the event engine's step
// (sim/training/step_graph, zero_comm) and the search's closed-form estimate alike.
#include "hardware/cluster_spec.hpp"
#include "models/plan.hpp"

namespace twinsim {

// One GPU's fetch of its offloaded parameter shard (`bytes`) before a ZeRO-3 all-gather:
// over its PCIe link from CPU memory (ZeRO-Infinity's bandwidth-centric partitioning,
// Rajbhandari et al. 2021 §6.1: every rank at once, each on its own link), read first from
// the drives into the parameter swapper's CPU buffer when they live on NVMe (DeepSpeed's
// AsyncPartitionedParameterSwapper: the aio read completes before the buffer is copied).
double offloaded_param_fetch_s(const HostSpec& host, const PlanKnobs& plan, double bytes);

// The optimizer step's NVMe traffic for one GPU's shard with plan.offload_device: nvme
// (0 otherwise). DeepSpeed's optimizer swapper (PipelinedOptimizerSwapper), per sub-group:
// reads the states and the fp32 gradients it swapped out during the backward, the CPU
// updates them, then writes the states back, one after the other (pipeline_read and
// pipeline_write are off by default); with offload_params the updated 16-bit weights go
// back to the drives as well. `state_bytes`, `grad_bytes`, `param_bytes`: the shard's.
double nvme_optimizer_swap_s(const HostSpec& host, const PlanKnobs& plan, double state_bytes, double grad_bytes,
                             double param_bytes);

}  // namespace twinsim
