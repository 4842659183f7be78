#pragma once
// The traffic of offloaded state between the GPU, CPU memory and the node's NVMe drives
// (plan.offload_params, plan.offload_device): one home for the training step's event engine
// (sim/training/step_graph, zero_comm), the search's closed-form estimate, and the serving
// passes that stream their weights (sim/inference/iteration_cost).
#include "hardware/cluster_spec.hpp"
#include "models/plan.hpp"

namespace twinsim {

// The drives' rate one GPU gets: the node's, split over the GPUs of the node the plan uses
// (they swap at once: ZeRO-Infinity's bandwidth-centric partitioning, Rajbhandari et al.
// 2021 §6.1); one GPU alone gets all of it. cluster.host keeps each GPU's share of a full node.
double nvme_read_share_Bps(const ClusterSpec& cluster, const PlanKnobs& plan);
double nvme_write_share_Bps(const ClusterSpec& cluster, const PlanKnobs& plan);

// The host DRAM bandwidth one GPU's offloaded update gets: the node's, split over the GPUs of
// the node the plan uses (the ranks that update at once), as the drives' rate above.
double host_memory_share_Bps(const ClusterSpec& cluster, const PlanKnobs& plan);

// One GPU's fetch of its offloaded parameter shard (`bytes`) before a ZeRO-3 all-gather:
// over its PCIe link from CPU memory (every rank at once, each on its own link), read first
// from the drives into the parameter swapper's CPU buffer when they live on NVMe (DeepSpeed's
// AsyncPartitionedParameterSwapper: the aio read completes before the buffer is copied).
double offloaded_param_fetch_s(const ClusterSpec& cluster, const PlanKnobs& plan, double bytes);

// The rate at which a serving pass streams offloaded weights to the GPU (ZeRO-Inference,
// plan.offload_params on inference), module after module with the next prefetched: the PCIe
// link from CPU memory, or from the drives the slower of the drives and the link (GPUDirect
// Storage or a CPU bounce buffer, both pipelined).
double offloaded_weight_read_Bps(const ClusterSpec& cluster, const PlanKnobs& plan);

// The optimizer step's NVMe traffic for one GPU's shard with plan.offload_device: nvme
// (0 otherwise). DeepSpeed's optimizer swapper (PipelinedOptimizerSwapper), per sub-group:
// reads the states and the fp32 gradients it swapped out during the backward, the CPU
// updates them, then writes the states back, one after the other (pipeline_read and
// pipeline_write are off by default); with offload_params the updated 16-bit weights go
// back to the drives as well. `state_bytes`, `grad_bytes`, `param_bytes`: the shard's.
double nvme_optimizer_swap_s(const ClusterSpec& cluster, const PlanKnobs& plan, double state_bytes, double grad_bytes,
                             double param_bytes);

}  // namespace twinsim
