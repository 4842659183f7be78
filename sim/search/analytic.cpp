#include "sim/search/analytic.hpp"

#include <algorithm>

#include "models/param_count.hpp"
#include "scenario/default_stack.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/cost/straggler_wait.hpp"
#include "sim/memory/buffers.hpp"
#include "sim/memory/hf_eager_memory.hpp"
#include "sim/memory/stage_layers.hpp"
#include "sim/memory/weights.hpp"
#include "sim/training/activation_offload.hpp"
#include "sim/training/fabric_share.hpp"
#include "sim/training/rank_layout.hpp"
#include "sim/training/step_graph.hpp"
#include "sim/training/transfer_bytes.hpp"
#include "sim/training/zero_comm.hpp"

namespace twinsim {

namespace {

struct StageTime {
  double fwd = 0, bwd = 0;  // one micro-batch, all the stage's layers (+ embedding / head)
  // of those, on the compute stream: what a straggler is behind by at the next blocking collective
  double compute_fwd = 0, compute_bwd = 0;
  bool synced = false;  // a blocking collective every micro-batch (where the straggler waits land)
  double total() const { return fwd + bwd; }
};

// Stragglers (ClusterSpec::straggler): a blocking collective waits for the group's slowest
// member, behind by the straggler share of the compute since the last one (the step graph's
// straggler_wait). A stage with one every micro-batch (a layer's TP or EP collective, the
// embedding's or head's TP all-reduce) thus pays the share of all its compute; one without
// pays it at a non-overlapped data-parallel reduce, over every micro-batch (estimate()).

// Whether a pass of this layer holds a blocking collective.
bool pass_blocks(const PassTimes& p, bool tp_comm_overlap) {
  const double tp = tp_comm_overlap ? p.tp_fwd_waited + p.tp_bwd_waited : p.tp_fwd + p.tp_bwd;
  return tp + p.ep_fwd + p.ep_bwd > 0;
}

// `count` layers (or an embedding / head) of these prices on the stage's compute stream.
void add_compute(StageTime& t, const PassTimes& p, double count, bool recomputed) {
  t.compute_fwd += count * p.fwd;
  t.compute_bwd += count * ((recomputed ? p.recompute : 0.0) + p.bwd);
}

void charge_straggler(StageTime& t, double straggler) {
  if (!t.synced) return;
  t.fwd += straggler_wait_s(straggler, t.compute_fwd);
  t.bwd += straggler_wait_s(straggler, t.compute_bwd);
}

// What one candidate's estimate reads: the scenario, the candidate's plan and workload, its
// layer prices and the counts every part uses.
struct Pricing {
  const Scenario& base;
  const Plan& plan;
  const TrainingWorkload& training;
  const Candidate& c;
  const LayerPrices& prices;
  Dtype state;     // what the DP collectives carry
  std::int64_t m;  // micro-batches per step
  int v;           // virtual stages (chunks) per GPU
  GroupLayout dp_group;  // the candidate's data-parallel group, laid out once
};

// ZeRO's collectives of one layer on one GPU, seconds.
// ZeRO-3 gathers each layer's parameters before use, prefetched one layer ahead
// (Rajbhandari et al. 2020 §5.3): it hides behind the layer's compute when shorter.
// Its gradients are reduce-scattered after each backward on the same DP stream (§5.3).
// ZeRO 2 reduce-scatters the same way (§5.2). Without overlap both are whole-chunk
// collectives on the compute stream instead (add_whole_chunks), as the step graph builds them.
struct LayerZero {
  double gather_dense = 0, gather_moe = 0, reduce_dense = 0, reduce_moe = 0;
  double gather_dense_bwd = 0, gather_moe_bwd = 0;  // hpZ gathers the backward's inside the node
};

LayerZero layer_zero(const Pricing& p) {
  LayerZero z;
  const bool layer_gathers = p.c.shards_params() && p.c.dp_group_size() > 1 && !zero3_whole_stage(p.plan);
  const bool layer_reduces = sharded_grads(p.plan) && !sharded_grads_whole_stage(p.plan);
  if (!layer_gathers && !layer_reduces) return z;
  const ModelSpec& model = p.base.model;
  const ClusterSpec& cluster = p.base.cluster;
  const StackSpec& stack = p.base.stack;
  // one layer on one GPU, as the memory model lays it out (sim/memory/weights.hpp)
  const StageParams dense_params = layer_params_on_gpu(model, p.plan, false);
  const StageParams moe_params = model.moe ? layer_params_on_gpu(model, p.plan, true) : StageParams{};
  if (layer_gathers) {
    z.gather_dense = zero3_layer_gather_s(cluster, p.plan, stack, dense_params, p.state);
    z.gather_dense_bwd = zero3_layer_gather_s(cluster, p.plan, stack, dense_params, p.state, true,
                                              zero_recompute_regather(model, p.plan, stack, false));
  }
  if (layer_reduces)  // the gradients of what the step trains (all, or LoRA's adapters)
    z.reduce_dense = zero_layer_reduce_s(cluster, p.plan, stack, trainable_layer_params(model, p.plan, p.training, false),
                                         p.state, p.prices.low_rank);
  if (model.moe && layer_gathers) {
    z.gather_moe = zero3_layer_gather_s(cluster, p.plan, stack, moe_params, p.state);
    z.gather_moe_bwd = zero3_layer_gather_s(cluster, p.plan, stack, moe_params, p.state, true,
                                            zero_recompute_regather(model, p.plan, stack, true));
  }
  if (model.moe && layer_reduces)
    z.reduce_moe = zero_layer_reduce_s(cluster, p.plan, stack, moe_params, p.state, p.prices.low_rank);
  if (fsdp_keeps_stage_gathered(p.plan, stack)) {  // once a step, not once a micro-batch (step_graph.cpp)
    for (double* once : {&z.gather_dense, &z.gather_moe, &z.reduce_dense, &z.reduce_moe})
      *once /= static_cast<double>(p.m);
    z.gather_dense_bwd = z.gather_moe_bwd = 0;
  }
  return z;
}

// A dense and an MoE layer's passes on the compute stream (layer_pass_s), and whether a pass
// holds a blocking collective.
struct LayerPasses {
  double f_dense = 0, b_dense = 0, f_moe = 0, b_moe = 0;
  bool synced = false;
};

// ZeRO 2/3 without overlap: every chunk's passes of a micro-batch gather (ZeRO-3) and
// reduce-scatter its parameters whole, blocking (sim/training/step_graph.hpp)
void add_whole_chunks(const Pricing& p, int stage, StageTime& t) {
  if (!sharded_grads_whole_stage(p.plan)) return;
  StageParams priced{-1, -1};  // chunks mostly hold alike layers: price each size once
  ShardedStageComm comm;
  for (int chunk = 0; chunk < p.v; ++chunk) {
    const StageParams params = chunk_params_per_gpu(p.base.model, p.plan, stage, chunk);
    if (params.dense != priced.dense || params.expert != priced.expert)
      comm = sharded_stage_comm(p.base.cluster, p.plan, p.base.stack, p.state, params, p.prices.low_rank);
    priced = params;
    t.fwd += comm.gather_s;
    t.bwd += comm.gather_s + comm.reduce_s;
  }
}

// Activation offload (one stage, validated): its copies' excess over the passes.
void add_offload_stalls(const Pricing& p, const LayerPasses& l, StageTime& t) {
  if (p.plan.offload_activations_layers <= 0) return;
  const ModelSpec& model = p.base.model;
  const std::int64_t n = p.plan.offload_activations_layers;
  const bool moe = model.is_moe_layer(0);  // the offloaded layers lead the model: price them as the first
  const ActivationTransfer x =
      activation_transfer(p.base.cluster, moe ? p.prices.activations.moe : p.prices.activations.dense);
  t.fwd += transfer_stall_s(x.offload_s, moe ? l.f_moe : l.f_dense, forward_waits(n, model.layers));
  t.bwd += transfer_stall_s(x.reload_s, moe ? l.b_moe : l.b_dense, n);
  if (forward_waits(n, model.layers) < n) {  // the last offload, waited for by no forward
    const bool last_moe = model.is_moe_layer(model.layers - 1);
    const PassTimes& h = p.prices.head;
    const double head = h.fwd + h.tp_fwd + h.bwd + h.tp_bwd;
    t.bwd += unwaited_offload_stall_s(x, (last_moe ? l.f_moe : l.f_dense) + head, last_moe ? l.b_moe : l.b_dense);
  }
}

// Which of FSDP's root unit's collectives the plan runs beside the per-layer ones (the
// whole-stage paths count the root with the layers).
struct RootUnitCalls {
  bool gathers = false, reduces = false;
  bool any() const { return gathers || reduces; }
};

RootUnitCalls root_unit_calls(const Pricing& p) {
  return {p.c.shards_params() && p.c.dp_group_size() > 1 && !zero3_whole_stage(p.plan),
          sharded_grads(p.plan) && !sharded_grads_whole_stage(p.plan)};
}

// The root unit's collectives (zero3_rest_gather_s, zero_rest_reduce_s) on the first and the
// last stage: they depend on the plan alone, so the model prices them once a plan's knobs
// (AnalyticModel::root_prices_), not once a candidate.
RootUnitPrices root_unit_prices(const Pricing& p) {
  const RootUnitCalls calls = root_unit_calls(p);
  auto price = [&](int stage) {
    RootUnitPrices::Stage s;
    if (calls.gathers)
      s.gather_s = zero3_rest_gather_s(p.base.cluster, p.plan, p.base.stack, p.base.model, stage, p.state);
    if (calls.reduces)
      s.reduce_s = zero_rest_reduce_s(p.base.cluster, p.plan, p.base.stack, p.base.model, p.training, stage, p.state,
                                      p.prices.low_rank);
    return s;
  };
  RootUnitPrices r;
  r.first = price(0);
  r.last = p.c.pp > 1 ? price(p.c.pp - 1) : r.first;
  return r;
}

// FSDP's root unit on a stage that holds one, per micro-batch on its path: under ZeRO-3 the
// gather before each forward waits for the previous micro-batch's reduce-scatter (the step
// graph's root_gather), so both stand there; ZeRO-2's reduce-scatter alone hides behind the
// next forward but the last one's.
double root_unit_s(const Pricing& p, const RootUnitPrices& root, int stage) {
  const RootUnitCalls calls = root_unit_calls(p);
  if ((stage != 0 && stage != p.c.pp - 1) || !calls.any()) return 0;
  const RootUnitPrices::Stage& s = stage == 0 ? root.first : root.last;
  const auto m = static_cast<double>(p.m);
  const double t = calls.gathers ? s.gather_s + s.reduce_s : s.reduce_s / m;
  return fsdp_keeps_stage_gathered(p.plan, p.base.stack) ? t / m : t;  // once a step
}

// One micro-batch through a stage: its layers, the embedding or head it holds, the host's
// time, FSDP's root unit, stragglers, whole-chunk ZeRO and offload stalls.
StageTime stage_time(const Pricing& p, const RootUnitPrices& root, const LayerPasses& l, int stage) {
  const StageLayers layers = stage_layers(p.base.model, p.plan, stage);
  const bool recomputed = p.c.recompute != Recompute::none;  // the recompute runs on the compute stream
  StageTime t;
  t.fwd = layers.dense * l.f_dense + layers.moe * l.f_moe;
  t.bwd = layers.dense * l.b_dense + layers.moe * l.b_moe;
  add_compute(t, p.prices.dense, static_cast<double>(layers.dense), recomputed);
  add_compute(t, p.prices.moe, static_cast<double>(layers.moe), recomputed);
  t.synced = l.synced;
  for (const PassTimes* end : {stage == 0 ? &p.prices.embedding : nullptr, stage == p.c.pp - 1 ? &p.prices.head : nullptr}) {
    if (end == nullptr) continue;
    t.fwd += end->fwd + end->tp_fwd;
    t.bwd += end->bwd + end->tp_bwd;
    add_compute(t, *end, 1, false);
    t.synced = t.synced || end->tp_fwd + end->tp_bwd > 0;
  }
  t.fwd += p.base.stack.host_microbatch_s;  // the host's time per micro-batch, once a stage (its first chunk)
  t.fwd += root_unit_s(p, root, stage);
  t.compute_fwd += p.base.stack.host_microbatch_s;
  charge_straggler(t, p.base.cluster.straggler);
  add_whole_chunks(p, stage, t);
  add_offload_stalls(p, l, t);
  return t;
}

// The first, a middle and the last stage (the same one where the pipeline is shorter).
struct Stages {
  StageTime first, middle, last;
};

// Narayanan et al. 2021 §2.2: bubble (p - 1) / (v m) of the ideal time, here with the
// slowest stage setting the steady-state pace; plus the activations' sends.
void add_pipeline(const Pricing& p, const Stages& s, AnalyticEstimate& e) {
  const int pp = p.c.pp;
  double sum = s.first.total();
  if (pp > 1) sum += s.last.total();
  if (pp > 2) sum += (pp - 2) * s.middle.total();
  const double slowest = std::max({s.first.total(), s.middle.total(), s.last.total()});
  e.bubble_s = (sum - slowest) / p.v;
  e.pipeline_s = static_cast<double>(p.m) * slowest + e.bubble_s;
  if (pp <= 1) return;
  // activations (and their gradients) cross each stage boundary once while filling and
  // once while draining; Megatron sends 1/t of the tensor per TP rank (§4.1)
  const double bytes =
      pipeline_transfer_bytes(p.base.model, p.plan, p.c.micro_batch, p.training.seq_len, p.training.precision);
  const GroupLayout pair = pipeline_pair_layout(p.base.cluster, p.plan);
  // across nodes, at the fabric's fair share as fast mode prices it (sim/training/fabric_share.hpp)
  const double send = collective_time_s(p.base.cluster, CollectiveOp::send_recv, pair, bytes) *
                      (pair.nodes() > 1 ? pipeline_fabric_slowdown(p.base.cluster, p.plan) : 1.0);
  e.pipeline_s += 2.0 * (pp - 1) * send;
  e.bubble_s += 2.0 * (pp - 1) * send;
}

// Megatron-core's DDP buckets of the first stage, which finishes its backward last
// (sim/memory/buffers.hpp); without overlap one bucket holds the whole buffer (bucket_size
// None), as the step graph builds it. A bucket holds the stage's dense and expert parameters
// in proportion: each part goes over its own group (over_dp_groups), as the step graph's do.
struct DpBuckets {
  std::int64_t count = 1;
  double params = 0, expert_share = 0;
};

DpBuckets dp_buckets(const Pricing& p, const StageParams& stage0) {
  const std::int64_t params = stage0.total();
  const std::int64_t per_bucket = p.c.overlap_grad_reduce ? dp_bucket_params(p.plan) : params;
  DpBuckets b;
  b.count = std::max<std::int64_t>(1, (params + per_bucket - 1) / per_bucket);
  b.params = static_cast<double>(params) / static_cast<double>(b.count);
  b.expert_share = params > 0 ? static_cast<double>(stage0.expert) / static_cast<double>(params) : 0.0;
  return b;
}

// The overlapped reduce's exposed time: bucket k is ready k/n into the last backward; the dp
// stream runs them in order, slowing that backward while they run.
double overlapped_reduce_exposed_s(const Pricing& p, const Stages& s, std::int64_t buckets, double t_bucket) {
  const ClusterSpec& cluster = p.base.cluster;
  const double slowed_bwd =
      interfered_s(s.first.bwd, static_cast<double>(buckets - 1) * t_bucket, nccl_compute_slowdown(cluster));
  const double gap = slowed_bwd / static_cast<double>(buckets);
  double exposed = slowed_bwd - s.first.bwd + t_bucket + static_cast<double>(buckets - 1) * std::max(0.0, t_bucket - gap);
  // NIC sharing while draining: a stage's buckets hold its NIC when the DP group spans nodes,
  // so its last backward's send to the previous stage (across nodes) waits for the buckets
  // still running: each boundary of the drain adds that wait (the step graph's stage NIC,
  // sim/training/step_graph.cpp add_nics)
  if (p.c.pp > 1 && p.dp_group.nodes() > 1 && pipeline_pair_layout(cluster, p.plan).nodes() > 1)
    exposed += static_cast<double>(p.c.pp - 1) * std::max(0.0, static_cast<double>(buckets) * t_bucket - s.middle.bwd);
  return exposed;
}

// ZeRO 0-2's data-parallel time not hidden (ZeRO 2 reduced its grads in every backward): the
// gradient reduce at the step's end and the distributed optimizer's parameter gather.
double dp_exposed_s(const Pricing& p, const Stages& s, const StageParams& stage0) {
  if (p.c.dp_group_size() <= 1 || p.c.shards_params()) return 0;
  const ClusterSpec& cluster = p.base.cluster;
  const DpBuckets b = dp_buckets(p, stage0);
  const double dense = b.params * (1 - b.expert_share), expert = b.params * b.expert_share;
  const double t_bucket = over_dp_groups(cluster, p.plan, dense, expert, [&](const GroupLayout& g, double n) {
    return stack_gradient_reduce_s(cluster, p.plan, p.base.stack, g, n, p.state, p.prices.low_rank);
  });
  double exposed = 0;
  if (sharded_grads(p.plan)) {
    // nothing left to reduce at the step's end (the step graph's add_data_parallel)
  } else if (p.c.overlap_grad_reduce) {
    exposed = overlapped_reduce_exposed_s(p, s, b.count, t_bucket);
  } else {
    exposed = static_cast<double>(b.count) * t_bucket;
    // after the whole backward the first bucket waits for the slowest rank: where no blocking
    // collective synchronised the stage, behind by every micro-batch's compute
    if (!s.first.synced)
      exposed += straggler_wait_s(cluster.straggler,
                                  static_cast<double>(p.m) * (s.first.compute_fwd + s.first.compute_bwd));
  }
  if (p.c.shards_optimizer()) {  // the distributed optimizer gathers the updated parameters back
    const double t_gather = over_dp_groups(cluster, p.plan, dense, expert, [&](const GroupLayout& g, double n) {
      return collective_time_s(cluster, CollectiveOp::all_gather, g, n * param_element_bytes(p.state));
    });
    exposed += p.c.overlap_param_gather ? t_gather : static_cast<double>(b.count) * t_gather;
  }
  return exposed;
}

}  // namespace

AnalyticModel::AnalyticModel(const Scenario& base, const SearchSpace& space)
    : base_(base),
      space_(space),
      stack_per_plan_(default_stack_follows_plan(base)),
      cache_(base, space.tp, space.cp, space.experts_divisors, space.options.max_micro_batch),
      plan_(base.plan),
      training_(*base.training) {
  plan_.stage_layers.clear();
}

// One layer's forward (or recompute + backward) on the compute stream, with what
// overlaps it on side streams showing only where it is longer.
// The compute runs slowed while the side streams' NCCL kernels run beside it (interfered_s,
// the engine's interference in closed form).
double AnalyticModel::layer_pass_s(const Candidate& c, const PassTimes& p, double zero3_s, bool forward) const {
  const bool tp_side = c.tp_comm_overlap;
  const double slowdown = nccl_compute_slowdown(base_.cluster);
  // overlapped TP collectives run beside the compute but for what it waits for (async TP)
  const double tp_beside_fwd = tp_side ? p.tp_fwd - p.tp_fwd_waited : 0.0;
  const double tp_blocking_fwd = tp_side ? p.tp_fwd_waited : p.tp_fwd;
  // the CP exchange runs beside the compute but for what it waits for (PyTorch's ring attention)
  const double cp_beside_fwd = p.cp_fwd - p.cp_fwd_waited, cp_beside_bwd = p.cp_bwd - p.cp_bwd_waited;
  // ZeRO-3's gather (and reduce-scatter) runs on streams of its own, beside the compute and
  // the blocking TP and EP collectives on the compute stream alike, as the step graph runs it
  if (forward) {
    const double beside = std::max(cp_beside_fwd, tp_beside_fwd);  // the compute's own side work
    const double side = std::max(beside, zero3_s);
    const double stream =
        std::max(interfered_s(p.fwd, side, slowdown), beside) + tp_blocking_fwd + p.cp_fwd_waited + p.ep_fwd;
    return std::max(stream, zero3_s);
  }
  // the recompute runs TP collectives again (full: the forward's; op-level checkpointing: the
  // gathers), full recompute the CP and EP exchanges too
  const double tp_beside_again = tp_side ? p.tp_recompute - p.tp_recompute_waited : 0.0;
  const double tp_blocking_again = tp_side ? p.tp_recompute_waited : p.tp_recompute;
  double recompute = std::max(p.recompute, tp_beside_again) + tp_blocking_again;
  if (c.recompute == Recompute::full)
    recompute =
        std::max({p.recompute, cp_beside_fwd, tp_beside_again}) + tp_blocking_again + p.cp_fwd_waited + p.ep_fwd;
  // ZeRO-3's next gather, prefetched one layer ahead, runs beside this layer's recompute
  // as well as its backward; the CP exchange and TP side collectives beside the backward
  const double side = std::max(cp_beside_bwd, tp_side ? p.tp_bwd - p.tp_bwd_waited : 0.0);
  const double pass = recompute + std::max(interfered_s(p.bwd, side, slowdown), side);
  const double tp_blocking_bwd = tp_side ? p.tp_bwd_waited : p.tp_bwd;
  return std::max(interfered_s(pass, zero3_s, slowdown) + tp_blocking_bwd + p.cp_bwd_waited + p.ep_bwd, zero3_s);
}

std::int64_t AnalyticModel::stage_peak_bytes(const Plan& plan, const TrainingWorkload& t, const LayerActivations& a,
                                             int stage) const {
  const std::int64_t buffers = training_buffers(base_.model, plan, base_.stack, base_.cluster.gpu, t, stage_params(base_.model, plan, stage)).total();
  if (base_.stack.hf_modeling())  // the memory report's own model of that stack
    return hf_eager_training_stage(base_.model, plan, t, stage, buffers, base_.stack, base_.cluster.gpu).peak_bytes;
  const WeightMemory w = training_weight_memory(base_.model, plan, base_.stack, base_.cluster.gpu, t, stage);
  const std::int64_t act = training_activation_bytes(base_.model, plan, base_.stack, t, a, stage);
  return w.params + w.grads + w.optimizer + act + buffers;
}

// The step's end after the pipeline, the exposed DP collectives and the optimizer: the TP
// sum of the replicated grads (tp_grad_sum_s) on the first stage, which finishes its backward
// last, as the data parallelism; then the step's time.
void AnalyticModel::add_step_end(AnalyticEstimate& e) const {
  e.tp_grad_sum_s = tp_grad_sum_s(base_.cluster, base_.model, plan_, base_.stack, training_, 0);
  e.step_s = e.pipeline_s + e.dp_exposed_s + e.tp_grad_sum_s + e.optimizer_s;
}

AnalyticEstimate AnalyticModel::estimate(const Candidate& c) {
  if (stack_per_plan_) {
    const std::string_view stack = default_training_stack_name(c);
    if (stack != base_.stack.name) return model_on(c, stack).estimate_on_own_stack(c);
  }
  return estimate_on_own_stack(c);
}

AnalyticModel& AnalyticModel::model_on(const Candidate& c, std::string_view stack) {
  for (const std::unique_ptr<AnalyticModel>& m : other_stacks_)
    if (m->base_.stack.name == stack) return *m;
  Scenario on = base_;  // the candidate's default stack as candidate_scenario sets it
  on.stack = default_training_stack(c);
  other_stacks_.push_back(std::make_unique<AnalyticModel>(on, space_));
  other_stacks_.back()->stack_per_plan_ = false;
  return *other_stacks_.back();
}

AnalyticEstimate AnalyticModel::estimate_on_own_stack(const Candidate& c) {
  const LayerPrices& prices = cache_.get(c);
  apply_to_plan(c, plan_);  // with the scenario's settings that apply to it (keep_scenario_settings)
  training_.micro_batch = c.micro_batch;
  const ClusterSpec& cluster = base_.cluster;
  const Pricing p{base_,
                  plan_,
                  training_,
                  c,
                  prices,
                  dp_state_dtype(base_.stack, training_.precision),
                  training_.micro_batches(c.dp),
                  c.schedule == Schedule::interleaved ? c.virtual_stages : 1,
                  group_layout(cluster, plan_, ParallelGroup::dp)};

  const LayerZero z = layer_zero(p);
  // a layer's backward gather (prefetched for the next layer) and its reduce-scatter run on two
  // streams, as the step graph builds them: side by side inside a node, one after the other
  // where the group's collectives hold the NICs (across nodes)
  const bool one_link =
      p.dp_group.nodes() > 1 && !zero3_gather_in_node(cluster, plan_, true);  // hpZ's, HSDP's stay in the node
  auto zero_side = [&](double gather, double reduce) { return one_link ? gather + reduce : std::max(gather, reduce); };
  const bool moe = base_.model.moe.has_value();
  LayerPasses l;
  if (base_.stack.zero_gather_blocking) {
    // each gather on the compute stream before its layer's pass; across nodes it waits for the
    // reduce-scatter before it on the NICs, inside a node the reduce-scatter runs beside the pass
    auto blocked = [&](double pass_beside_reduce, double pass_alone, double reduce) {
      return one_link ? pass_alone + reduce : pass_beside_reduce;
    };
    l.f_dense = layer_pass_s(c, prices.dense, 0, true) + z.gather_dense;
    l.b_dense = z.gather_dense_bwd + blocked(layer_pass_s(c, prices.dense, z.reduce_dense, false),
                                             layer_pass_s(c, prices.dense, 0, false), z.reduce_dense);
    l.f_moe = moe ? layer_pass_s(c, prices.moe, 0, true) + z.gather_moe : 0;
    l.b_moe = moe ? z.gather_moe_bwd + blocked(layer_pass_s(c, prices.moe, z.reduce_moe, false),
                                               layer_pass_s(c, prices.moe, 0, false), z.reduce_moe)
                  : 0;
  } else if (base_.stack.fsdp_prefetch_after_backward) {
    // FSDP1's BACKWARD_POST: the backward's gather starts once the layer after it is done, so
    // it stands before the pass; the reduce-scatter runs beside the pass
    l.f_dense = layer_pass_s(c, prices.dense, z.gather_dense, true);
    l.b_dense = z.gather_dense_bwd + layer_pass_s(c, prices.dense, z.reduce_dense, false);
    l.f_moe = moe ? layer_pass_s(c, prices.moe, z.gather_moe, true) : 0;
    l.b_moe = moe ? z.gather_moe_bwd + layer_pass_s(c, prices.moe, z.reduce_moe, false) : 0;
  } else {
    l.f_dense = layer_pass_s(c, prices.dense, z.gather_dense, true);
    l.b_dense = layer_pass_s(c, prices.dense, zero_side(z.gather_dense_bwd, z.reduce_dense), false);
    l.f_moe = moe ? layer_pass_s(c, prices.moe, z.gather_moe, true) : 0;
    l.b_moe = moe ? layer_pass_s(c, prices.moe, zero_side(z.gather_moe_bwd, z.reduce_moe), false) : 0;
  }
  l.synced = pass_blocks(prices.dense, c.tp_comm_overlap) || (moe && pass_blocks(prices.moe, c.tp_comm_overlap));

  Stages s;
  const RootUnitPrices root =
      root_unit_calls(p).any() ? root_prices_.get(c, [&] { return root_unit_prices(p); }) : RootUnitPrices{};
  s.first = stage_time(p, root, l, 0);
  s.last = c.pp > 1 ? stage_time(p, root, l, c.pp - 1) : s.first;
  s.middle = c.pp > 2 ? stage_time(p, root, l, 1) : s.first;
  AnalyticEstimate e;
  add_pipeline(p, s, e);
  // data parallelism and the optimizer's step on the first stage, which finishes its backward
  // last; the optimizer over its shard: the step graph's ops (step_graph.hpp)
  const StageParams stage0 = trainable_stage_params(base_.model, plan_, training_, 0);
  e.dp_exposed_s = dp_exposed_s(p, s, stage0);
  const double shard = sharded_params_per_gpu(stage0.dense, stage0.expert, plan_, c.shards_optimizer());
  e.optimizer_s = optimizer_shard_s(cluster, base_.stack, plan_, training_, shard) +
                  zero3_persistent_gather_s(cluster, plan_, base_.stack, stage_layers(base_.model, plan_, 0).total());
  add_step_end(e);
  add_memory(c, prices.activations, e);
  return e;
}

// The peak of the stages that can hold it, and whether it fits the GPU (and what is offloaded,
// the host's share and the drives', where described: sim/memory/memory_report).
void AnalyticModel::add_memory(const Candidate& c, const LayerActivations& a, AnalyticEstimate& e) const {
  e.peak_bytes = stage_peak_bytes(plan_, training_, a, 0);
  if (c.pp > 1) e.peak_bytes = std::max(e.peak_bytes, stage_peak_bytes(plan_, training_, a, c.pp - 1));
  if (c.pp > 2) e.peak_bytes = std::max(e.peak_bytes, stage_peak_bytes(plan_, training_, a, 1));
  e.fits = e.peak_bytes <= capacity_bytes();
  if (!c.offload_optimizer && plan_.offload_activations_layers <= 0) return;
  for (int stage : {0, c.pp - 1}) {
    const WeightMemory w = training_weight_memory(base_.model, plan_, base_.stack, base_.cluster.gpu, training_, stage);
    const HostSpec& host = base_.cluster.host;
    e.fits = e.fits && w.host() + offloaded_activation_bytes(base_.model, plan_, a) <= host.memory_bytes &&
             (host.nvme_bytes == 0 || w.nvme() <= host.nvme_bytes);
  }
}

}  // namespace twinsim
