#pragma once
// ZeRO's per-layer collectives over the data-parallel group (Rajbhandari et al. 2020
// §5.2-5.3): stage 3 all-gathers a layer's parameters before each use, stages 2 and 3
// reduce-scatter its gradients after its backward. The stack decides how many calls carry
// a layer (StackSpec::zero_*_bucket_params): each call pays its ring's latency, which
// grows with the DP group's rank count, so over hundreds of nodes many small calls, not
// their bytes, set the time. One home for the event engine's step graph and the search's
// closed-form estimate.
#include <cstdint>

#include "hardware/cluster_spec.hpp"
#include "hardware/stack_spec.hpp"
#include "models/dtype.hpp"
#include "models/model_spec.hpp"
#include "models/plan.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/memory/weights.hpp"
#include "sim/training/rank_layout.hpp"

namespace twinsim {

// What PowerSGD (plan.gradient_compression: powersgd; Vogels et al. 2019) makes of the
// gradients it reduces, per gradient value of the model's transformer layers on one GPU:
// each weight matrix rows x cols of the layers' op list (models/layer_ops) that is worth it
// is sent as its rank-r factors P (rows x r) and Q (cols x r), everything else (vectors,
// matrices too small to gain 2x) whole, as PyTorch's powerSGD_hook does. Zero without
// powersgd. A bucket's embedding or head values are priced at the layers' shares.
struct LowRankShare {
  double compressed = 0;  // share of the values in compressed matrices
  double p = 0, q = 0;    // P and Q values sent per gradient value
  double flops = 0;       // of the factor GEMMs, per gradient value
  double launches = 0;    // kernels of the GEMMs and orthogonalisations, per gradient value
};
LowRankShare powersgd_share(const ModelSpec& model, const Plan& plan);

// A data-parallel collective over `dense` parameters and `expert` routed-expert parameters of
// one GPU: Megatron-core keeps the experts in buffers of their own, reduced (and gathered)
// over the expert-data-parallel group (dp x cp / ep ranks; none when that is 1), the rest
// over the data-parallel group; with ep = 1 the two groups are one and so is the call. Under
// ZeRO with hybrid sharding (plan.dp_replicate) the dense ones over the shard group.
// `price(layout, params)` gives one collective's seconds.
template <class Price>
double over_dp_groups(const ClusterSpec& cluster, const Plan& plan, double dense, double expert, Price&& price) {
  const GroupLayout dp = group_layout(cluster, plan, ParallelGroup::dp_shard);
  if ((plan.ep <= 1 && plan.etp() == plan.tp) || expert <= 0) return price(dp, dense + expert);
  const GroupLayout edp = group_layout(cluster, plan, ParallelGroup::expert_dp);
  return (dense > 0 ? price(dp, dense) : 0.0) + (edp.ranks > 1 ? price(edp, expert) : 0.0);
}

// The parameters of `p` one GPU's optimizer steps (or keeps gradients of) when ZeRO shards
// them (`sharded`): the dense ones' share of the data-parallel group, the experts' of the
// expert-data-parallel group, as the memory model shards them (sim/memory/weights.cpp).
double sharded_params_per_gpu(std::int64_t dense, std::int64_t expert, const PlanKnobs& plan, bool sharded);

// Hybrid sharding (plan.dp_replicate > 1, ZeRO 1-3): after each reduce-scatter of `params`
// gradients over a shard group of `shard_ranks`, the shard it leaves (params / shard_ranks
// values of `element` bytes) is all-reduced over the replicate group, on the same stream:
// FSDP2's foreach_reduce (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py,
// `if all_reduce_group is not None:  # HSDP` ... dist.all_reduce(reduce_output,
// group=all_reduce_group)) and FSDP1's _reduce_grad (torch/distributed/fsdp/_runtime_utils.py,
// dist.all_reduce(new_sharded_grad, group=state._inter_node_pg)), each backward; Megatron-core's
// distributed-optimizer instances likewise per bucket. Zero without hybrid sharding.
double replicate_all_reduce_s(const ClusterSpec& cluster, const Plan& plan, double params, double element,
                              int shard_ranks);

// Whether ZeRO-3's per-layer gathers stay inside a node, the group's NICs not held: hpZ's
// backward gathers (from the node's secondary partition) and any gather over a hybrid shard
// group that one node holds. The step graph and the search's estimate both ask here.
bool zero3_gather_in_node(const ClusterSpec& cluster, const Plan& plan, bool backward);

// Calls that carry `params` parameters in buckets of at most `bucket` (0: one call).
std::int64_t zero_calls(double params, std::int64_t bucket);

// DeepSpeed <= 0.5's ZeRO-3 under full recompute (StackSpec::zero_reuse_distance_params): of a
// dense (`moe` false) or MoE layer's weights on one GPU, the share (and the count) that the
// backward gathers again after the recomputed forward released them: weight j's reuse distance
// is twice the weights the forward uses after it (stage3.py, _keep_for_later with
// get_reuse_distance_in_numel over the traced module order). Empty otherwise.
struct ZeroRegather {
  double share = 0;
  std::int64_t calls = 0;
};
ZeroRegather zero_recompute_regather(const ModelSpec& model, const Plan& plan, const StackSpec& stack, bool moe);

// Once a step after the optimizer, DeepSpeed <= 0.5 gathers the tensors that stay gathered
// (StackSpec::zero_persistent_tensors of each of `layers`) in one all_gather, then copies each
// tensor's chunk out of each rank's (_post_step: _allgather_params), one copy_ each: host time.
double zero3_persistent_gather_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack,
                                 std::int64_t layers);

// One layer's parameter all-gather (`params` on this GPU before sharding over `group`), one
// pass; the backward's with `again` (zero_recompute_regather) adds the released weights' gathers.
// With plan.zero_quantized_weights (ZeRO++ qwZ) in int8 and dequantised after; with
// plan.zero_hpz_partition_size (hpZ), the backward's gathers run over that many GPUs of
// the node, from the secondary partition, in 16 bits. With plan.offload_params each rank first
// copies its shard from CPU memory (cluster.host's h2d).
// The calls are the stack's per-tensor count (StackSpec::zero_gather_calls) or its buckets, each
// with its list collective's host copies (StackSpec::zero_list_copy_s, one per rank).
double zero3_layer_gather_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack, double params,
                            Dtype precision, const GroupLayout& group, bool backward = false,
                            const ZeroRegather& again = {});

// One layer's gradient reduce-scatter over `group`, one micro-batch. With
// plan.zero_quantized_gradients (ZeRO++ qgZ) in int4, quantised before and dequantised after
// each of its two hops; with plan.gradient_compression (ZeRO-2) as dp_gradient_reduce_s.
// `state`: dp_state_dtype's; the gradients travel in dp_gradient_dtype(stack, state).
double zero_layer_reduce_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack, double params,
                           Dtype state, const LowRankShare& low_rank, const GroupLayout& group);

// The same for a layer's parameters on one GPU (sim/memory/weights.hpp): the dense ones over
// the data-parallel group, the routed experts over theirs (over_dp_groups). The step graph
// and the search's estimate call these.
double zero3_layer_gather_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack,
                            const StageParams& layer, Dtype precision, bool backward = false,
                            const ZeroRegather& again = {});
double zero_layer_reduce_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack,
                           const StageParams& layer, Dtype state, const LowRankShare& low_rank);

// What a pipeline stage holds on one GPU outside its transformer layers (the embedding on the
// first stage; the final norm, the head and MTP on the last), as the memory model lays it out
// (stage_params less its layers): with `training`, only what the step trains of it (none of it
// under LoRA). ZeRO 2/3 with per-layer collectives gathers and reduce-scatters it beside the
// layers: PyTorch FSDP's root unit (FSDP1's outer wrapper, FSDP2's fully_shard(model)) holds
// what no block's unit took.
StageParams stage_rest_params(const ModelSpec& model, const Plan& plan, int stage,
                              const TrainingWorkload* training = nullptr);

// The root unit's gather, once each micro-batch's forward, before the embedding: FSDP keeps it
// gathered through the backward (FSDP1's _post_forward frees no root parameters, "intention
// that they are immediately used for backward", torch/distributed/fsdp/_runtime_utils.py;
// FSDP2's fully_shard: "The root FSDP state has its value specially set to False"). And its
// gradients' reduce-scatter once each backward, after the embedding's. A stack that issues
// one call per tensor (StackSpec::zero_gather_calls, DeepSpeed <= 0.5) issues one for each of
// the rest's weight tables (word and learned position embeddings, an untied head); its
// norms ride along in bytes. Zero where the stage holds no such parameters.
double zero3_rest_gather_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack, const ModelSpec& model,
                           int stage, Dtype precision);
double zero_rest_reduce_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack, const ModelSpec& model,
                          const TrainingWorkload& training, int stage, Dtype state, const LowRankShare& low_rank);

// The collective that reduces the data-parallel gradients: an all-reduce without ZeRO (every
// rank keeps the whole sum) and where the stack all-reduces its ZeRO 1-2 buckets whole
// (StackSpec::zero_bucket_all_reduce, DeepSpeed's default), else a reduce-scatter (each rank
// gets the sum of the shard its optimizer steps). The step graph and the search's estimate
// both take it from here.
CollectiveOp dp_gradient_op(const StackSpec& stack, const Plan& plan);

// One call of the data-parallel gradient reduction (`op`: dp_gradient_op's choice) of
// `params` gradients over `dp`. With plan.gradient_compression in int8
// or int4 (one fp32 scale per 2,048 values) on the wire, plus the quantise and dequantise
// passes at the memory-bound rates of kernels `quantize` and `dequantize` (where the device
// lists none, `quantize`'s); with topk the selected values and
// their indices, gathered (all-reduce) or sent to their shard's owner (reduce-scatter), with
// a selection pass and a scatter-add at the same rate; with powersgd (low_rank: the
// model's powersgd_share) three all-reduces whatever `op` (the whole values, then P, then
// Q: every rank rebuilds the whole sum and keeps what its shard needs), the factor GEMMs,
// the error-feedback passes and the orthogonalisations between them (powersgd_reduce_s).
double dp_gradient_reduce_s(const ClusterSpec& cluster, const Plan& plan, CollectiveOp op, const GroupLayout& dp,
                            double params, Dtype precision, const LowRankShare& low_rank);

// The same as `stack` runs it: dp_gradient_op's collective over the gradients in
// dp_gradient_dtype (`state`: dp_state_dtype's). The step graph's DDP buckets and whole-stage
// reduces, ZeRO-2's compressed per-layer reduces and the search's estimate all call it.
double stack_gradient_reduce_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack,
                               const GroupLayout& dp, double params, Dtype state, const LowRankShare& low_rank);

}  // namespace twinsim
