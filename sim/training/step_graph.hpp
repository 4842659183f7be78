#pragma once
// The task graph of one training step, ready for the discrete-event engine.
//
// Fast mode: one representative GPU per pipeline stage (all TP/CP/DP replicas of a stage
// do the same work at the same time). Each GPU has a compute stream and streams for
// TP, CP and DP communication; pipeline sends travel on one link per stage boundary and
// direction. Per layer and micro-batch the step holds forward, recompute and backward
// compute tasks and the collectives around them; the stage's schedule (GPipe, 1F1B,
// interleaved) is the program order of its compute stream, so bubbles and overlap come
// out of the simulation.
#include <optional>
#include <string_view>
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/engine/task_graph.hpp"
#include "sim/training/layer_costs.hpp"
#include "sim/training/zero_comm.hpp"

namespace twinsim {

// The streams of one simulated GPU, and the NIC it sends through (full mode only).
struct StageStreams {
  // dp: gradient reductions and the optimizer's parameter gathers; gather: ZeRO-3's
  // per-layer parameter prefetch, a stream of its own as in DeepSpeed (its all-gather
  // stream) and FSDP (its unshard stream), so a layer's prefetch does not queue behind the
  // previous layer's gradient reduce-scatter
  engine::ResourceId compute = -1, tp = -1, cp = -1, dp = -1, gather = -1;
  // ep: the all-to-alls of plan.moe_a2a_overlap's paired passes (-1: none; sim/training/ep_overlap.hpp)
  engine::ResourceId ep = -1;
  engine::ResourceId nic = -1;
  // its PCIe link's copy stream to CPU memory (plan.offload_activations_layers; -1: none)
  engine::ResourceId host_link = -1;
  engine::ResourceId uplink = -1;  // its leaf switch's spine uplink (full mode, oversubscribed fabric)
  int leaf = -1;                   // the leaf switch its NIC hangs off (full mode, cluster.fabric)
  engine::ResourceId pod_uplink = -1;  // its pod's links to the core (full mode, oversubscribed core)
  int pod = -1;                        // the pod its node sits in (full mode, cluster.fabric pods)
  // the replicas a transfer of its replica stands for on the uplink (pod uplink): 1, or
  // under hybrid folding its class's replicas there (sim/training/replica_classes.hpp)
  int uplink_copies = 1, pod_uplink_copies = 1;
  int rank = 0;  // global rank in Megatron order tp-cp-ep-dp-pp
};

// Fast: one GPU stands for every replica of its stage. Full: every GPU, every collective
// a rendezvous of its group, and inter-node traffic on the NICs it shares; the data-parallel
// replicas that the cluster cannot tell apart are simulated once (replica_symmetry.hpp),
// with the same result as simulating each. Full per rank: every GPU simulated on its own
// (the reference the folded full mode is checked against).
enum class Fidelity { fast, full, full_per_rank };
inline bool is_full(Fidelity f) { return f != Fidelity::fast; }
// The names the command line and Python take: "fast", "full", "full-per-rank".
std::string_view to_string(Fidelity f);
std::optional<Fidelity> fidelity_from_string(std::string_view name);

struct StepCategories {
  engine::CategoryId compute, recompute, tp_comm, cp_comm, ep_comm, pp_comm, dp_comm, optimizer;
  engine::CategoryId offload;  // activation copies to and from CPU memory
};

// What a layer task stands for, so a trace can show the ops inside it.
enum class LayerPass : std::uint8_t { none, fwd, bwd, recompute };
struct TaskOrigin {
  std::int32_t layer = -1;  // -1: embedding/head/other
  std::int32_t cost = -1;   // index into StepCosts::layers (-1: none)
  LayerPass pass = LayerPass::none;
};

struct StepCosts {
  std::vector<LayerCost> layers;       // one per distinct layer kind
  std::vector<int> layer_cost_index;   // per model layer: its entry in `layers`
  LayerCost embedding, head;
};

struct StepGraph {
  engine::TaskGraph graph;
  std::vector<StageStreams> stages;               // the GPU each stage's report describes
  std::vector<std::vector<StageStreams>> ranks;   // per stage: every simulated GPU
  int simulated_gpus = 0;                         // all stages' (fast mode: one per stage)
  // per GPU index within a stage: the pipeline links its transfers take (both directions,
  // every boundary)
  std::vector<std::vector<engine::ResourceId>> pp_links;
  StepCategories categories{};
  std::vector<TaskOrigin> origin;  // per task
};

StepCosts price_step(const Scenario& s);
StepGraph build_step_graph(const Scenario& s, const StepCosts& costs, Fidelity fidelity = Fidelity::fast);

// Parameters one GPU of `stage` holds (sharded by TP and, for experts, EP).
std::int64_t stage_params_per_gpu(const Scenario& s, int stage);

// The optimizer's step over this GPU's share of the stage's parameters (its update, then,
// in mixed precision, the master weights' copy into the model's 16-bit ones), and the
// zeroing of the gradient buffer a step starts with (Megatron's zero_grad_buffer):
// memory-bound. optimizer_step_s is the step's time, its ops together.
// The ops over a shard of `shard` parameters (the search's estimate calls them too).
// The gradients it reads are as the stack keeps them (dp_gradient_dtype).
std::vector<ComputeOp> optimizer_shard_ops(const StackSpec& stack, const PlanKnobs& plan, const TrainingWorkload& t,
                                           double shard);
// The reference executor's NaN/Inf check of a shard's gradients before the update: 0 unless
// the device lists the measured scan (kernel_efficiency "finite_check": a calibrated host).
double finite_check_s(const ClusterSpec& cluster, const StackSpec& stack, const Plan& plan, const TrainingWorkload& t,
                      double shard);
// The step's time over a shard: the GPU's ops above, or with plan.offload_optimizer the
// host's update and the weights' copy back, at least as long as the stack's measured host
// time per parameter (one formula for the step graph and the search).
double optimizer_shard_s(const ClusterSpec& cluster, const StackSpec& stack, const Plan& plan, const TrainingWorkload& t,
                         double shard);
double optimizer_step_s(const Scenario& s, int stage);
// The step's-end TP all-reduce of the gradients every TP rank holds whole but computes only
// in part (models/param_count.hpp tp_summed_grad_params: under sequence parallelism the
// norms, row-parallel biases, router...), after the DP reduce and before the optimizer, as
// Megatron-core's finalize_model_grads runs _allreduce_layernorm_grads: one coalesced
// all-reduce of their main_grad, so in the gradients' type (dp_gradient_dtype). Under ZeRO-2/3
// (sharded_grads) once per micro-batch, before its reduce-scatter, priced together at the
// step's end. 0 without TP or under LoRA (those parameters frozen). The step graph and the
// search's estimate price it here.
double tp_grad_sum_s(const ClusterSpec& cluster, const ModelSpec& model, const Plan& plan, const StackSpec& stack,
                     const TrainingWorkload& t, int stage);
// The HBM bytes of the optimizer's update of this stage's shard on the GPU (0 offloaded).
double optimizer_step_hbm_bytes(const Scenario& s, int stage);
ComputeOp zero_grad_op(const Scenario& s, int stage);

// ZeRO 2/3 keep only a shard of the grads, so every micro-batch's backward reduce-scatters
// them (Rajbhandari et al. 2020 §5.2; DeepSpeed reduces each micro-step's buckets), by
// buckets when overlap_grad_reduce, else the whole stage as one bucket (Megatron-core sets
// bucket_size to None when overlap_grad_reduce is off; the executor, exec/train/zero.cpp,
// alike). ZeRO-3 without overlap also all-gathers the whole stage before every forward
// and backward pass of a micro-batch. Under an interleaved schedule each virtual stage
// (chunk) does so for its own parameters, in its own passes.
bool sharded_grads(const Plan& plan);
bool sharded_grads_whole_stage(const Plan& plan);
bool zero3_whole_stage(const Plan& plan);
// Those whole-stage collectives' seconds per call over `params` parameters per GPU (a
// stage's, or a chunk's: its dense ones over the data-parallel group, its routed experts over
// theirs, over_dp_groups); 0 where the plan has none. ZeRO-2's reduce-scatter carries
// plan.gradient_compression as the DDP buckets do (stack_gradient_reduce_s; low_rank: the
// model's powersgd_share; `state`: dp_state_dtype's). The step graph and the search's
// estimate both price them here.
struct ShardedStageComm {
  double gather_s = 0, reduce_s = 0;
};
ShardedStageComm sharded_stage_comm(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack,
                                    Dtype state, const StageParams& params, const LowRankShare& low_rank);
// Parameters per GPU of virtual stage `chunk` of `stage`: its layers', and the embedding's
// (first chunk of stage 0) or the head's (last chunk of the last stage).
StageParams chunk_params_per_gpu(const ModelSpec& model, const Plan& plan, int stage, int chunk);

}  // namespace twinsim
