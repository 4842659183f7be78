#pragma once
// The time of one serving iteration: its ops (iteration_ops) priced with the training
// simulator's cost model (sim/cost: roofline compute, NCCL-style collectives) per pipeline
// stage. Built once per scenario, then asked for many iterations (the serving loop).
#include <string>
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/inference/iteration_ops.hpp"

namespace twinsim {

struct IterationCost {
  std::vector<double> stage_s;  // each pipeline stage's part of the forward pass
  double p2p_s = 0;             // one activation transfer between neighbouring stages
  double compute_s = 0;         // summed over stages: kernels
  double tp_comm_s = 0;         // summed over stages: TP all-reduces and the logits gather
  double ep_comm_s = 0;         // summed over stages: MoE dispatch and combine all-to-alls (plan.ep > 1)
  double weight_bytes = 0;      // summed over stages, one GPU of each: weights read
  double kv_bytes = 0;          // summed over stages: K,V read and written by attention
  // plan.offload_params (ZeRO-Inference): summed over stages, the time the weights' stream
  // from CPU memory or the drives adds beyond the modules' kernels (each module's weights
  // arrive while the one before runs: a module takes the longer of the two)
  double weight_fetch_exposed_s = 0;
  // The serving engine's host time the pass waits for (StackSpec::serving_host_s; under
  // serving_async only its excess over the device's pass), in the first stage's time.
  double host_s = 0;
  // The pass's latency: every stage in turn, plus the transfers between them.
  double latency_s() const;
};

// One op's part of a pass, under the executor's op names ("attn.qkv.fwd",
// "head.logits.fwd"): its time for one call (one layer) and its calls per pass, summed
// over the stages the pass crosses (one GPU of each). Over a pass's ops, the sum of
// time_s x count is IterationCost::latency_s() less the transfers between stages.
struct PassOpTime {
  std::string name;
  double time_s = 0;
  double count = 0;
};

class ServingCostModel {
 public:
  explicit ServingCostModel(const Scenario& scenario);
  IterationCost cost(const IterationShape& shape) const;
  // The same pass op by op (for comparing with the executor's profile; cost() is the fast path).
  std::vector<PassOpTime> op_times(const IterationShape& shape) const;
  int stages() const { return static_cast<int>(stage_dense_.size()); }
  // One pass of an expert-parallel group whose ranks are the attention-DP replicas (plan.dp ==
  // plan.ep, one stage), `rank_shapes` each rank's pass (tokens 0: it has none). The ranks run
  // in lockstep: every MoE layer's dispatch waits for the last rank, so each layer takes the
  // slowest rank's own ops (attention, dense layers, router, shared experts, embedding, head)
  // and then the routed experts' part, which each GPU runs on its share of every rank's routed
  // tokens (priced at the ranks' mean tokens). With the stack's host time as cost() adds it,
  // the slowest rank's.
  double ep_lockstep_pass_s(const std::vector<IterationShape>& rank_shapes) const;

 private:
  // The parts of IterationCost for one list of ops (one layer, the embedding, the head).
  struct OpsCost {
    double time_s = 0, compute_s = 0, tp_comm_s = 0, ep_comm_s = 0, weight_bytes = 0, kv_bytes = 0;
  };
  // One pass's op lists: one layer of each kind, the embedding, the head.
  struct PassOps {
    std::vector<LayerOp> dense, moe, embedding, head;
  };
  PassOps build_pass(const IterationShape& shape) const;
  // The stack's serving host time for the pass (IterationCost::host_s), into its first stage;
  // `ops` the pass's op lists (build_pass(shape)).
  double engine_host_s(const IterationShape& shape, const PassOps& ops) const;
  // The host's dispatch and launch of the pass's ops when the engine runs it eagerly
  // (StackSpec::serving_eager_prefill and a prompt chunk in the pass), on an x86 host; else 0.
  double eager_launch_s(const IterationShape& shape, const PassOps& ops) const;
  void add_engine_host_time(IterationCost& cost, const IterationShape& shape, const PassOps& ops) const;
  // The bytes one GPU's pass touches and the next pass touches again (its stage's GEMM
  // weights, their input and output rows, its KV cache; the largest stage's): the working set
  // at which the device's reuse curve prices its GEMMs (compute_cost.hpp gemm_reuse_factor).
  double working_set_bytes(const PassOps& ops) const;
  OpsCost price(const std::vector<LayerOp>& ops, double working_set) const;
  // One stage's pass time over its ops (`ops`, one pass's lists) that run on the rank's own
  // tokens (`experts` false) or over the routed experts' ops that join the ranks (`experts`
  // true): ep_lockstep_pass_s.
  double lockstep_part_s(const PassOps& ops, bool experts) const;
  // A kernel's description for the compute cost model (GEMMs at `gemm_clock`).
  ComputeOp compute_op(const LayerOp& op, double working_set, double gemm_clock) const;
  // One call of one op: a TP collective's time, or a kernel's; `tensor_s` gets a GEMM's or
  // the attention's math time (0 otherwise), the power limit's load.
  double call_time_s(const LayerOp& op, double working_set, double gemm_clock, double& tensor_s) const;
  // Each op's call in one run of the list, a TP collective with its wait for the group's
  // slowest rank (cluster.straggler, as the training step's blocking collectives), the GEMMs
  // at the clock the GPU's power limit leaves for the list's mix (sim/cost/power_limit.hpp).
  std::vector<double> list_times_s(const std::vector<LayerOp>& ops, double working_set) const;
  Scenario s_;
  GroupLayout tp_group_;
  GroupLayout ep_group_;  // the GPUs of one TP position across the ep replicas
  GroupLayout pp_pair_;
  std::vector<std::int64_t> stage_dense_, stage_moe_;  // layers of each kind per stage
  // plan.offload_params (ZeRO-Inference): each module's weights' fetch, the same every pass
  // (0 without offload)
  struct ModuleFetch {
    double dense_layer_s = 0, moe_layer_s = 0, embedding_s = 0;
  };
  ModuleFetch fetch_;
};

}  // namespace twinsim
