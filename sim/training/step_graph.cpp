#include "sim/training/step_graph.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string>

#include "models/op_names.hpp"
#include "models/optimizer_state.hpp"
#include "models/param_count.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/cost/offload_io.hpp"
#include "sim/cost/straggler_wait.hpp"
#include "sim/memory/activations.hpp"
#include "sim/memory/buffers.hpp"
#include "sim/memory/stage_layers.hpp"
#include "sim/memory/weights.hpp"
#include "sim/training/activation_offload.hpp"
#include "sim/training/ep_overlap.hpp"
#include "sim/training/fabric_share.hpp"
#include "sim/training/pipeline_schedule.hpp"
#include "sim/training/rank_layout.hpp"
#include "sim/training/step_ranks.hpp"
#include "sim/training/transfer_bytes.hpp"
#include "sim/training/zero_comm.hpp"

namespace twinsim {

using engine::ResourceId;
using engine::TaskId;

namespace {

// One layer's parameters on one GPU: the memory model's layout (sim/memory/weights.hpp:
// norms, row-parallel biases and the router replicated, experts over EP).
StageParams layer_params_split(const Scenario& s, std::int64_t layer) {
  return layer_params_on_gpu(s.model, s.plan, s.model.is_moe_layer(layer));
}

// One GPU's position in the task order: the compute task it ran last, the one before,
// and side-stream communication its next compute task must wait for.
struct Chain {
  TaskId first = -1;  // the slot's first task on the compute stream
  TaskId last = -1;
  TaskId before_last = -1;
  std::vector<TaskId> pending;
  // the last task before the current layer's pass began, and before the previous one's:
  // a prefetch for this layer may start once the layer before the previous one is done
  TaskId layer_start = -1, previous_layer_start = -1;
  TaskId last_reduce = -1;  // the slot's last gradient reduce-scatter of this GPU
};

using Chains = std::vector<Chain>;  // one per GPU of a stage

struct Builder {
  const Scenario& s;
  const StepCosts& costs;
  Fidelity fidelity;
  StepGraph out;
  std::vector<StageRanks> stages;
  int pp, v, m;
  std::vector<std::vector<std::vector<std::int64_t>>> chunk_layers;  // [stage][chunk] -> layers
  // per slot ((stage * m + mb) * v + chunk) * 2 + backward, per GPU of the stage
  std::vector<std::vector<TaskId>> slot_first, slot_last;
  // per (stage, layer): each GPU's backward task in the layer's last micro-batch
  std::map<std::pair<int, std::int64_t>, std::vector<TaskId>> last_backward;
  std::vector<std::vector<std::vector<TaskId>>> dp_grad_tasks;  // [stage][gpu] -> reduce tasks
  std::vector<std::vector<TaskId>> slot_begin;  // [stage][gpu]: the opening marker of its latest slot
  std::vector<std::vector<TaskId>> root_reduces;  // [stage][gpu]: its latest root reduce-scatter (root_reduce)
  LowRankShare low_rank;  // plan.gradient_compression: powersgd, what it sends of the gradients
  // DeepSpeed <= 0.5's ZeRO-3 under full recompute: the weights the backward gathers again
  ZeroRegather regather_dense, regather_moe;
  // plan.offload_activations_layers: each offloaded layer's copy out and back, by layer kind
  ActivationTransfer offload_dense, offload_moe;
  // per GPU of the (one) stage: the current micro-batch's offload and reload task of a layer
  std::vector<std::map<std::int64_t, TaskId>> offloads, reloads;
  bool offloaded(std::int64_t layer) const { return layer >= 0 && layer < s.plan.offload_activations_layers; }
  // the type the data-parallel collectives carry (dp_state_dtype)
  Dtype state_dtype() const { return dp_state_dtype(s.stack, s.training->precision); }

  Builder(const Scenario& sc, const StepCosts& c, Fidelity f)
      : s(sc),
        costs(c),
        fidelity(f),
        pp(sc.plan.pp),
        v(sc.plan.schedule == Schedule::dualpipe ? 2 : sc.plan.virtual_stages),
        m(static_cast<int>(sc.training->micro_batches(sc.plan.dp))),
        low_rank(powersgd_share(sc.model, sc.plan)),
        regather_dense(zero_recompute_regather(sc.model, sc.plan, sc.stack, false)),
        regather_moe(zero_recompute_regather(sc.model, sc.plan, sc.stack, true)) {}

  bool dualpipe() const { return s.plan.schedule == Schedule::dualpipe; }
  // whether chunk `chunk` of `stage` holds the model's first layer (so the embedding) or its
  // last (so the head): the first and last virtual stage, under DualPipe on both end ranks
  bool holds_first_layer(int stage, int chunk) const {
    return dualpipe() ? (stage == 0 && chunk == 0) || (stage == pp - 1 && chunk == 1) : stage == 0 && chunk == 0;
  }
  bool holds_last_layer(int stage, int chunk) const {
    return dualpipe() ? (stage == pp - 1 && chunk == 0) || (stage == 0 && chunk == 1)
                      : stage == pp - 1 && chunk == v - 1;
  }
  // the last micro-batch through `chunk` (DualPipe's chunk 0 runs the first half of them)
  int last_micro_batch(int chunk) const { return dualpipe() && chunk == 0 ? m / 2 - 1 : m - 1; }
  int slot_index(int stage, int mb, int chunk, bool backward) const {
    return ((stage * m + mb) * v + chunk) * 2 + (backward ? 1 : 0);
  }
  const LayerCost& cost_of(std::int64_t layer) const { return costs.layers[costs.layer_cost_index[layer]]; }
  bool zero3() const { return s.plan.shards_params() && s.plan.dp_group_size() > 1; }
  bool sharded_grads() const { return twinsim::sharded_grads(s.plan); }
  std::vector<std::vector<ShardedStageComm>> chunk_comm;  // [stage][chunk], priced once

  // Layers of virtual stage (chunk c, stage i) in Megatron's order c * pp + i
  // (sim/memory/stage_layers: the memory model's assignment).
  void assign_layers() {
    chunk_layers.assign(pp, std::vector<std::vector<std::int64_t>>(v));
    if (dualpipe()) {  // chunk 0: the rank's own stage; chunk 1: the mirror's (pipeline_split.hpp)
      const Plan one = one_stage_a_rank(s.plan);
      for (int i = 0; i < pp; ++i)
        for (int c = 0; c < 2; ++c) {
          const int stage = c == 0 ? i : dualpipe_mirror_stage(s.plan, i);
          const std::int64_t first = chunk_first_layer(s.model, one, stage, 0);
          for (std::int64_t k = 0; k < chunk_layer_count(s.model, one, stage, 0); ++k)
            chunk_layers[i][c].push_back(first + k);
        }
      return;
    }
    for (int c = 0; c < v; ++c)
      for (int i = 0; i < pp; ++i) {
        const std::int64_t first = chunk_first_layer(s.model, s.plan, i, c);
        for (std::int64_t k = 0; k < chunk_layer_count(s.model, s.plan, i, c); ++k) chunk_layers[i][c].push_back(first + k);
      }
  }

  TaskId task(const std::string& name, double seconds, engine::CategoryId cat, std::span<const ResourceId> r,
              TaskOrigin origin = {}) {
    const TaskId t = out.graph.add_task(name, seconds, cat, r);
    for (auto [link, copies] : uplink_copies) out.graph.set_copies(t, link, copies);
    uplink_copies.clear();
    out.origin.push_back(origin);
    return t;
  }

  // Compute each GPU did since its last blocking collective ([stage][gpu]): what the
  // slowest member of the next one is behind by (ClusterSpec::straggler).
  std::vector<std::vector<double>> since_sync;

  // The wait for a group's slowest member at a blocking collective of `members` (the
  // simulated GPUs of a group of `ranks`; in fast mode one stands for all), and the start
  // of a new interval for them.
  double straggler_wait(int stage, const std::vector<int>& members, int ranks) {
    if (ranks < 2) return 0;
    double since = 0;
    for (int g : members) since = std::max(since, since_sync[stage][g]);
    for (int g : members) since_sync[stage][g] = 0;
    return straggler_wait_s(s.cluster.straggler, since);
  }

  // The same compute task on every GPU of the stage.
  std::vector<TaskId> compute(Chains& chains, int stage, const std::string& name, double seconds,
                              engine::CategoryId cat, TaskOrigin origin = {}) {
    std::vector<TaskId> ids;
    for (std::size_t g = 0; g < chains.size(); ++g) {
      since_sync[stage][g] += seconds;
      const ResourceId stream = stages[stage].gpus[g].compute;
      const TaskId t = task(name, seconds, cat, {&stream, 1}, origin);
      for (TaskId p : chains[g].pending) out.graph.add_dependency(p, t);
      chains[g].pending.clear();
      if (chains[g].first < 0) chains[g].first = t;
      chains[g].before_last = chains[g].last;
      chains[g].last = t;
      ids.push_back(t);
    }
    return ids;
  }

  // Across nodes a collective also holds its members' NICs, which their pipeline transfers
  // share: full mode, every simulated member's own NIC; fast mode, the stage's one NIC.
  // Across leaf switches of an oversubscribed fabric (full mode) it holds a slot of each
  // of its members' leaves' spine uplinks as well, and across pods of an oversubscribed
  // core a slot of each of its members' pods' core uplinks.
  // Under hybrid folding a group of one replica counts on each uplink as its class's
  // replicas there (StageStreams::uplink_copies); a data-parallel group, one task over all
  // replicas, as one.
  void add_nics(const StageRanks& sr, const RankGroup& group, std::vector<ResourceId>& res) {
    if (!group.spans_nodes) return;
    auto add = [&](ResourceId link, int copies) {
      if (link < 0 || std::find(res.begin(), res.end(), link) != res.end()) return;
      res.push_back(link);
      if (copies > 1 && !group.all_replicas) uplink_copies.emplace_back(link, copies);
    };
    for (int g : group.members) add(sr.gpus[g].nic, 1);
    if (group.spans_leaves)
      for (int g : group.members) add(sr.gpus[g].uplink, sr.gpus[g].uplink_copies);
    if (group.spans_pods)
      for (int g : group.members) add(sr.gpus[g].pod_uplink, sr.gpus[g].pod_uplink_copies);
  }

  // copies of the next task on its shared uplinks (add_nics, pipeline transfers), set by task()
  std::vector<std::pair<ResourceId, int>> uplink_copies;

  // A collective of each group of `kind`: one task on its members' streams — their compute
  // streams when it blocks (Megatron's default), a side stream when it overlaps compute.
  // Overlapped, it runs beside the compute task it belongs to (TP overlap pipelines a
  // GEMM's chunks with their collectives; ring attention passes K,V while attending): it
  // waits for what preceded that task, and the next compute task waits for it.
  void comm(Chains& chains, int stage, GroupKind kind, const std::string& name, double seconds,
            engine::CategoryId cat, ResourceId StageStreams::*side, bool prefetch = false, bool in_node = false) {
    if (seconds <= 0) return;
    const StageRanks& sr = stages[stage];
    for (const RankGroup& group : sr.groups(kind)) {
      const std::vector<int>& members = group.members;
      std::vector<ResourceId> res;
      for (int g : members) res.push_back(side ? sr.gpus[g].*side : sr.gpus[g].compute);
      if (!in_node) add_nics(sr, group, res);
      // blocking, it also waits for the group's slowest member (overlapped, that is hidden)
      const TaskId t = task(name, seconds + (side ? 0 : straggler_wait(stage, members, group_ranks(kind))), cat, res);
      for (int g : members) {
        Chain& ch = chains[g];
        if (!side) {
          for (TaskId p : ch.pending) out.graph.add_dependency(p, t);
          ch.pending.clear();
          if (ch.last >= 0) out.graph.add_dependency(ch.last, t);
          if (ch.first < 0) ch.first = t;
          ch.before_last = ch.last;
          ch.last = t;
          continue;
        }
        const TaskId after = prefetch ? ch.previous_layer_start : ch.before_last >= 0 ? ch.before_last : ch.last;
        if (after >= 0) out.graph.add_dependency(after, t);
        ch.pending.push_back(t);
      }
    }
  }

  int group_ranks(GroupKind kind) const {
    switch (kind) {
      case GroupKind::tp: return s.plan.tp;
      case GroupKind::cp: return s.plan.cp;
      case GroupKind::ep: return s.plan.ep;
      case GroupKind::dp: return static_cast<int>(s.plan.dp_group_size());
    }
    return 1;
  }

  int slot_micro_batch = 0;  // the micro-batch of the slot being emitted

  // plan.moe_a2a_overlap (sim/training/ep_overlap.hpp): whether the slot being emitted runs
  // beside another (a steady-state forward and the backward after it); per [stage][gpu] the
  // all-to-alls its pair ran beside the compute, which the pair's last slot waits for
  bool slot_paired = false;
  std::vector<std::vector<std::vector<TaskId>>> ep_beside;
  std::map<std::pair<int, int>, double> ep_shares;  // per (layer cost, layers a chunk): ep_exposed_share

  // The share of a paired pass's all-to-alls the compute stream waits for, its chunk's layers
  // run pair by pair.
  double ep_share(std::int64_t layer, int stage) {
    const int layers = static_cast<int>(chunk_layers[stage][0].size());
    const auto key = std::make_pair(costs.layer_cost_index[layer], std::max(layers, 1));
    const auto found = ep_shares.find(key);
    if (found != ep_shares.end()) return found->second;
    const double share = ep_exposed_share(moe_layer_phases(cost_of(layer)), key.second, s.plan.delay_wgrad_compute,
                                          ep_corun_slowdowns(s.cluster, deepep_runs_ep_alltoalls(s)));
    return ep_shares[key] = share;
  }

  // A pass's EP collectives: blocking, or in a paired slot first the share the compute stream
  // waits for on it, then the rest on the EP stream, which only the pair's end waits for (one
  // collective: across nodes both hold the NICs in turn).
  void ep_comm(Chains& chains, int stage, std::int64_t layer, const std::string& name, double seconds) {
    const engine::CategoryId cat = out.categories.ep_comm;
    if (!ep_passes_paired(s.plan) || !slot_paired || seconds <= 0) {
      comm(chains, stage, GroupKind::ep, name, seconds, cat, nullptr);
      return;
    }
    const double waited = seconds * ep_share(layer, stage);
    comm(chains, stage, GroupKind::ep, name + ".waited", waited, cat, nullptr);
    std::vector<std::size_t> before;
    for (const Chain& c : chains) before.push_back(c.pending.size());
    comm(chains, stage, GroupKind::ep, name, seconds - waited, cat, &StageStreams::ep);
    for (std::size_t g = 0; g < chains.size(); ++g) {  // off the next compute task's inputs, onto the pair's end
      std::vector<TaskId>& pending = chains[g].pending;
      for (std::size_t k = before[g]; k < pending.size(); ++k) {
        if (waited > 0) out.graph.add_dependency(chains[g].last, pending[k]);
        ep_beside[stage][g].push_back(pending[k]);
      }
      pending.resize(before[g]);
    }
  }

  ResourceId StageStreams::*tp_side() const { return s.plan.tp_comm_overlap ? &StageStreams::tp : nullptr; }

  // A pass's TP collectives: blocking, or beside the compute with the part of them the
  // compute stream waits for (LayerCost::tp_waited_*: PyTorch's async TP) on it.
  void tp_comm(Chains& chains, int stage, const std::string& name, double seconds, double waited) {
    const ResourceId StageStreams::*side = tp_side();
    if (!side) {
      comm(chains, stage, GroupKind::tp, name, seconds, out.categories.tp_comm, nullptr);
      return;
    }
    comm(chains, stage, GroupKind::tp, name, seconds - waited, out.categories.tp_comm, tp_side());
    comm(chains, stage, GroupKind::tp, name + ".waited", waited, out.categories.tp_comm, nullptr);
  }

  // A pass's CP exchange beside the compute, with the part the compute stream waits for
  // (LayerCost::cp_waited_*: PyTorch's ring attention) on it.
  void cp_comm(Chains& chains, int stage, const std::string& name, double seconds, double waited) {
    comm(chains, stage, GroupKind::cp, name, seconds - waited, out.categories.cp_comm, &StageStreams::cp);
    comm(chains, stage, GroupKind::cp, name + ".waited", waited, out.categories.cp_comm, nullptr);
  }

  void zero3_gather(Chains& ch, int stage, std::int64_t layer, const char* pass);
  void zero3_stage_gather(Chains& ch, int stage, int chunk, const char* pass);
  void stage_shard_reduce(Chains& ch, int stage, int chunk);
  void shard_reduce(int stage, std::int64_t layer, const std::vector<TaskId>& backward);
  bool per_layer_reduces() const;
  void dp_reduce(int stage, const std::string& name, double seconds, const std::vector<TaskId>& after);
  void root_gather(Chains& ch, int stage);
  void root_reduce(Chains& ch, int stage);
  void offload_layer(Chains& ch, int stage, std::int64_t layer);
  void reload_layer(Chains& ch, int stage, std::int64_t layer);
  void forward_layer(Chains& ch, int stage, std::int64_t layer);
  void backward_layer(Chains& ch, int stage, std::int64_t layer, bool last_mb);
  void ends(Chains& ch, int stage, const LayerCost& lc, const std::string& name, bool backward);
  void emit_slot(int stage, const PipelineSlot& slot);
  void add_pipeline_transfers();
  void add_tp_grad_sum(int stage);
  void add_data_parallel(int stage);

  void build() {
    auto& g = out.graph;
    out.categories = {g.category("compute"), g.category("recompute"), g.category("tp_comm"),
                      g.category("cp_comm"), g.category("ep_comm"),   g.category("pp_comm"),
                      g.category("dp_comm"), g.category("optimizer"), g.category("offload")};
    stages = make_stage_ranks(s, fidelity, g);
    for (const StageRanks& sr : stages) {
      out.stages.push_back(sr.gpus.front());
      out.ranks.push_back(sr.gpus);
      out.simulated_gpus += static_cast<int>(sr.gpus.size());
    }
    assign_layers();
    for (const StageRanks& sr : stages) since_sync.emplace_back(sr.gpus.size(), 0.0);
    if (s.plan.offload_activations_layers > 0) {  // one stage (validated)
      const TrainingWorkload& t = *s.training;
      const LayerActivations kept =
          layer_activations(s.model, s.plan, training_shape(t, s.stack));
      offload_dense = activation_transfer(s.cluster, kept.dense);
      offload_moe = activation_transfer(s.cluster, kept.moe);
      offloads.assign(stages[0].gpus.size(), {});
      reloads.assign(stages[0].gpus.size(), {});
    }
    for (int i = 0; i < pp; ++i) {
      chunk_comm.emplace_back();
      for (int c = 0; c < v; ++c)
        chunk_comm.back().push_back(sharded_stage_comm(s.cluster, s.plan, s.stack, state_dtype(),
                                                       chunk_params_per_gpu(s.model, s.plan, i, c), low_rank));
    }
    slot_first.assign(static_cast<std::size_t>(pp) * m * v * 2, {});
    slot_last = slot_first;
    dp_grad_tasks.assign(pp, {});
    for (int i = 0; i < pp; ++i) dp_grad_tasks[i].assign(stages[i].gpus.size(), {});
    for (int i = 0; i < pp; ++i) slot_begin.emplace_back(stages[i].gpus.size(), -1);
    for (int i = 0; i < pp; ++i) root_reduces.emplace_back(stages[i].gpus.size(), -1);
    for (int i = 0; i < pp; ++i) ep_beside.emplace_back(stages[i].gpus.size());
    const int extra_warmup = s.plan.moe_a2a_overlap ? 1 : 0;
    for (int i = 0; i < pp; ++i) {
      const std::vector<PipelineSlot> order = stage_schedule(s.plan.schedule, pp, i, m, v, extra_warmup);
      for (std::size_t k = 0; k < order.size(); ++k) {
        // a steady-state forward and the backward after it run together (combined 1F1B);
        // DualPipe marks its own pairs
        slot_paired = dualpipe()         ? order[k].overlapped
                      : order[k].forward ? k + 1 < order.size() && !order[k + 1].forward
                                         : k > 0 && order[k - 1].forward;
        emit_slot(i, order[k]);
      }
    }
    add_pipeline_transfers();
    for (int i = 0; i < pp; ++i) add_data_parallel(i);
  }
};

// ZeRO-3 (Rajbhandari et al. 2020 §5.3): a layer's parameters are all-gathered before each
// use, one layer ahead: the gather may start once the layer before the previous one is
// done, so it runs beside the previous layer's whole pass, compute and blocking
// collectives alike, and at most two layers' gathered parameters are alive (FSDP's
// limit_all_gathers; DeepSpeed's prefetch). In the stack's calls (sim/training/zero_comm),
// on the GPU's gather stream: beside, not behind, the gradient reduce-scatters (across
// nodes both hold the NIC, which serves them in turn).
void Builder::zero3_gather(Chains& ch, int stage, std::int64_t layer, const char* pass) {
  for (Chain& c : ch) c.previous_layer_start = c.layer_start, c.layer_start = c.last;
  if (!zero3() || zero3_whole_stage(s.plan)) return;
  const bool backward = std::string_view(pass) == "bwd";
  // FSDP1's BACKWARD_POST issues it once the layer after it has its gradients: not before
  if (backward && s.stack.fsdp_prefetch_after_backward)
    for (Chain& c : ch) c.previous_layer_start = c.last;
  // FSDP2 under PP keeps the stage gathered: its first forward gathers, nothing after
  if (fsdp_keeps_stage_gathered(s.plan, s.stack) && (backward || slot_micro_batch > 0)) return;
  const double seconds = zero3_layer_gather_s(s.cluster, s.plan, s.stack, layer_params_split(s, layer), state_dtype(),
                                              backward, s.model.is_moe_layer(layer) ? regather_moe : regather_dense);
  // hpZ's backward gather and a gather over a one-node HSDP shard group stay inside the node:
  // the group's NICs are not held
  const bool in_node = zero3_gather_in_node(s.cluster, s.plan, backward);
  // a stack that drains the device before each gather (StackSpec::zero_gather_blocking) runs
  // it on the compute stream: nothing overlaps it
  ResourceId StageStreams::*stream = s.stack.zero_gather_blocking ? nullptr : &StageStreams::gather;
  comm(ch, stage, GroupKind::dp, "layer" + std::to_string(layer) + ".zero3.gather." + pass, seconds,
       out.categories.dp_comm, stream, true, in_node);
  // FSDP1 issues it before the layer after it's reduce-scatter, and one NCCL stream runs a
  // process group's collectives in issue order: that reduce-scatter waits for it
  if (backward && s.stack.fsdp_prefetch_after_backward)
    for (Chain& c : ch)
      if (c.last_reduce >= 0 && !c.pending.empty()) out.graph.add_dependency(c.pending.back(), c.last_reduce);
}

// ZeRO 2/3 with overlap: a layer's gradients are reduce-scattered into the shards after
// its backward, every micro-batch (§5.2-5.3), on the DP stream.
void Builder::shard_reduce(int stage, std::int64_t layer, const std::vector<TaskId>& backward) {
  if (!per_layer_reduces()) return;
  const double seconds =
      zero_layer_reduce_s(s.cluster, s.plan, s.stack,
                          trainable_layer_params(s.model, s.plan, *s.training, s.model.is_moe_layer(layer)), state_dtype(),
                          low_rank);
  dp_reduce(stage, "layer" + std::to_string(layer) + "." + op_names::kDpGradReduce, seconds, backward);
}

bool Builder::per_layer_reduces() const {
  if (!sharded_grads() || sharded_grads_whole_stage(s.plan)) return false;
  // FSDP2 under PP accumulates the stage's gradients unsharded: the last micro-batch reduces
  return !fsdp_keeps_stage_gathered(s.plan, s.stack) || slot_micro_batch == m - 1;
}

// A gradient reduce-scatter of each DP group on its members' DP streams (and NICs), after
// each member's `after`; the optimizer waits for it.
void Builder::dp_reduce(int stage, const std::string& name, double seconds, const std::vector<TaskId>& after) {
  const StageRanks& sr = stages[stage];
  for (const RankGroup& group : sr.dp) {
    std::vector<ResourceId> res;
    for (int g : group.members) res.push_back(sr.gpus[g].dp);
    add_nics(sr, group, res);
    const TaskId t = task(name, seconds, out.categories.dp_comm, res);
    for (int g : group.members) {
      out.graph.add_dependency(after[g], t);
      dp_grad_tasks[stage][g].push_back(t);
    }
  }
}

// FSDP's root unit (zero3_rest_gather_s): the stage's parameters outside its layers, gathered
// at the start of a micro-batch's forward and kept through its backward. On the gather
// stream, but after this GPU's previous root reduce-scatter: one NCCL stream runs a process
// group's collectives in issue order, and the root's reduce-scatter was issued last.
void Builder::root_gather(Chains& ch, int stage) {
  if (!zero3() || zero3_whole_stage(s.plan)) return;
  if (fsdp_keeps_stage_gathered(s.plan, s.stack) && slot_micro_batch > 0) return;
  const double seconds = zero3_rest_gather_s(s.cluster, s.plan, s.stack, s.model, stage, state_dtype());
  if (seconds <= 0) return;
  ResourceId StageStreams::*stream = s.stack.zero_gather_blocking ? nullptr : &StageStreams::gather;
  comm(ch, stage, GroupKind::dp, "rest.zero3.gather.fwd", seconds, out.categories.dp_comm, stream);
  for (std::size_t g = 0; g < ch.size(); ++g) {
    const TaskId t = stream ? ch[g].pending.back() : ch[g].last;
    if (root_reduces[stage][g] >= 0) out.graph.add_dependency(root_reduces[stage][g], t);
  }
}

// The root unit's gradients (zero_rest_reduce_s), reduce-scattered once the stage's backward
// is done: after the embedding's on the first stage.
void Builder::root_reduce(Chains& ch, int stage) {
  if (!per_layer_reduces()) return;
  const double seconds =
      zero_rest_reduce_s(s.cluster, s.plan, s.stack, s.model, *s.training, stage, state_dtype(), low_rank);
  if (seconds <= 0) return;
  std::vector<TaskId> after;
  for (const Chain& c : ch) after.push_back(c.last);
  dp_reduce(stage, std::string("rest.") + op_names::kDpGradReduce, seconds, after);
  for (std::size_t g = 0; g < ch.size(); ++g) root_reduces[stage][g] = dp_grad_tasks[stage][g].back();
}

// The whole chunk's parameters, gathered on the compute streams (no overlap) before a pass.
void Builder::zero3_stage_gather(Chains& ch, int stage, int chunk, const char* pass) {
  if (!zero3_whole_stage(s.plan)) return;
  comm(ch, stage, GroupKind::dp, std::string(op_names::kDpParamGather) + "." + pass, chunk_comm[stage][chunk].gather_s,
       out.categories.dp_comm, nullptr);
}

// ZeRO 2/3 without overlap: the whole chunk's gradients, reduce-scattered on the compute
// streams after every backward.
void Builder::stage_shard_reduce(Chains& ch, int stage, int chunk) {
  if (!sharded_grads_whole_stage(s.plan)) return;
  comm(ch, stage, GroupKind::dp, op_names::kDpGradReduce, chunk_comm[stage][chunk].reduce_s, out.categories.dp_comm,
       nullptr);
  for (std::size_t g = 0; g < ch.size(); ++g) dp_grad_tasks[stage][g].push_back(ch[g].last);
}

// Activation offload (sim/training/activation_offload.hpp): after layer L's forward its saved
// tensors go out on the host-link stream; layer L + 2 waits for the copy.
void Builder::offload_layer(Chains& ch, int stage, std::int64_t layer) {
  const double seconds = (s.model.is_moe_layer(layer) ? offload_moe : offload_dense).offload_s;
  for (std::size_t g = 0; g < ch.size(); ++g) {
    const ResourceId link = stages[stage].gpus[g].host_link;
    const TaskId t = task("layer" + std::to_string(layer) + ".offload", seconds, out.categories.offload, {&link, 1});
    out.graph.add_dependency(ch[g].last, t);
    offloads[g][layer] = t;
  }
}

// The reload of layer L starts with layer L + 1's backward (and after L's offload); layer L's
// backward waits for it.
void Builder::reload_layer(Chains& ch, int stage, std::int64_t layer) {
  const double seconds = (s.model.is_moe_layer(layer) ? offload_moe : offload_dense).reload_s;
  for (std::size_t g = 0; g < ch.size(); ++g) {
    const ResourceId link = stages[stage].gpus[g].host_link;
    const TaskId t = task("layer" + std::to_string(layer) + ".reload", seconds, out.categories.offload, {&link, 1});
    out.graph.add_dependency(offloads[g].at(layer), t);
    if (ch[g].last >= 0) out.graph.add_dependency(ch[g].last, t);
    reloads[g][layer] = t;
  }
}

void Builder::forward_layer(Chains& ch, int stage, std::int64_t layer) {
  const StepCategories& c = out.categories;
  const LayerCost& lc = cost_of(layer);
  const std::string prefix = "layer" + std::to_string(layer);
  if (offloaded(layer - 2))
    for (std::size_t g = 0; g < ch.size(); ++g) ch[g].pending.push_back(offloads[g].at(layer - 2));
  zero3_gather(ch, stage, layer, "fwd");
  compute(ch, stage, prefix + ".fwd", lc.fwd_s(TimeCategory::compute), c.compute,
          {static_cast<std::int32_t>(layer), costs.layer_cost_index[layer], LayerPass::fwd});
  cp_comm(ch, stage, prefix + ".cp.fwd", lc.fwd_s(TimeCategory::cp_comm), lc.cp_waited_fwd_s);
  tp_comm(ch, stage, prefix + ".tp.fwd", lc.fwd_s(TimeCategory::tp_comm), lc.tp_waited_fwd_s);
  ep_comm(ch, stage, layer, prefix + ".ep.fwd", lc.fwd_s(TimeCategory::ep_comm));
  if (offloaded(layer)) offload_layer(ch, stage, layer);
}

void Builder::backward_layer(Chains& ch, int stage, std::int64_t layer, bool last_mb) {
  const StepCategories& c = out.categories;
  const LayerCost& lc = cost_of(layer);
  const std::string prefix = "layer" + std::to_string(layer);
  const std::int32_t idx = costs.layer_cost_index[layer];
  if (offloaded(layer))
    for (std::size_t g = 0; g < ch.size(); ++g) ch[g].pending.push_back(reloads[g].at(layer));
  if (offloaded(layer - 1)) reload_layer(ch, stage, layer - 1);  // prefetched one layer ahead
  zero3_gather(ch, stage, layer, "bwd");
  if (s.plan.recompute != Recompute::none) {
    compute(ch, stage, prefix + ".recompute", lc.recompute_s(), c.recompute,
            {static_cast<std::int32_t>(layer), idx, LayerPass::recompute});
    // full recompute runs the layer's forward collectives again, op-level checkpointing TP's gathers
    if (s.plan.recompute == Recompute::full)
      cp_comm(ch, stage, prefix + ".cp.recompute", lc.fwd_s(TimeCategory::cp_comm), lc.cp_waited_fwd_s);
    const double tp_again = lc.recompute_comm_s(TimeCategory::tp_comm);
    if (tp_again > 0) tp_comm(ch, stage, prefix + ".tp.recompute", tp_again, lc.tp_waited_recompute_s);
    if (s.plan.recompute == Recompute::full)
      comm(ch, stage, GroupKind::ep, prefix + ".ep.recompute", lc.fwd_s(TimeCategory::ep_comm), c.ep_comm, nullptr);
  }
  ep_comm(ch, stage, layer, prefix + ".ep.bwd", lc.bwd_s(TimeCategory::ep_comm));
  const std::vector<TaskId> t = compute(ch, stage, prefix + ".bwd", lc.bwd_s(TimeCategory::compute), c.compute,
                                        {static_cast<std::int32_t>(layer), idx, LayerPass::bwd});
  // the exchange beside the backward it belongs to (issued with the attention's backward), before
  // the TP collectives that follow the compute: placed after them it would start only once the
  // backward had ended, and the next layer would wait for all of it
  cp_comm(ch, stage, prefix + ".cp.bwd", lc.bwd_s(TimeCategory::cp_comm), lc.cp_waited_bwd_s);
  tp_comm(ch, stage, prefix + ".tp.bwd", lc.bwd_s(TimeCategory::tp_comm), lc.tp_waited_bwd_s);
  if (last_mb) last_backward[{stage, layer}] = t;
  const std::size_t before = dp_grad_tasks[stage].empty() ? 0 : dp_grad_tasks[stage][0].size();
  shard_reduce(stage, layer, t);
  for (std::size_t g = 0; g < ch.size() && !dp_grad_tasks[stage].empty(); ++g)
    if (dp_grad_tasks[stage][g].size() > before) ch[g].last_reduce = dp_grad_tasks[stage][g].back();
}

void Builder::ends(Chains& ch, int stage, const LayerCost& lc, const std::string& name, bool backward) {
  const StepCategories& c = out.categories;
  const double work = backward ? lc.bwd_s(TimeCategory::compute) : lc.fwd_s(TimeCategory::compute);
  const double tp = backward ? lc.bwd_s(TimeCategory::tp_comm) : lc.fwd_s(TimeCategory::tp_comm);
  compute(ch, stage, name + (backward ? ".bwd" : ".fwd"), work, c.compute);
  comm(ch, stage, GroupKind::tp, name + (backward ? ".tp.bwd" : ".tp.fwd"), tp, c.tp_comm, nullptr);
}

void Builder::emit_slot(int stage, const PipelineSlot& slot) {
  const bool first_virtual = holds_first_layer(stage, slot.chunk);
  const bool last_virtual = holds_last_layer(stage, slot.chunk);
  const auto& layers = chunk_layers[stage][slot.chunk];
  Chains ch(stages[stage].gpus.size());
  slot_micro_batch = slot.micro_batch;
  // a zero-length marker opens every slot: what runs beside the slot's first task waits
  // for it (so for the slot's inputs), and the first layer's ZeRO-3 prefetch may start
  // once the GPU's previous slot has begun
  for (std::size_t g = 0; g < ch.size(); ++g) ch[g].layer_start = slot_begin[stage][g];
  const std::vector<TaskId> begin =
      compute(ch, stage, slot.forward ? "slot.fwd.begin" : "slot.bwd.begin", 0, out.categories.compute);
  slot_begin[stage] = begin;
  // the host's own time for the micro-batch (StackSpec::host_microbatch_s), once a stage at
  // its first chunk's forward (the batch's loading and the loss are per micro-batch, not per
  // chunk: Megatron's get_batch returns at once on a middle chunk; under DualPipe each
  // micro-batch crosses one of the rank's chunks): the GPU waits
  if (slot.forward && (slot.chunk == 0 || dualpipe()) && s.stack.host_microbatch_s > 0)
    compute(ch, stage, "slot.fwd.host", s.stack.host_microbatch_s, out.categories.compute);
  zero3_stage_gather(ch, stage, slot.chunk, slot.forward ? "fwd" : "bwd");
  if (slot.forward && (first_virtual || last_virtual)) root_gather(ch, stage);
  if (slot.forward) {
    if (first_virtual) ends(ch, stage, costs.embedding, "embedding", false);
    for (std::int64_t l : layers) forward_layer(ch, stage, l);
    if (last_virtual) ends(ch, stage, costs.head, "head", false);
  } else {
    if (last_virtual) ends(ch, stage, costs.head, "head", true);
    for (auto it = layers.rbegin(); it != layers.rend(); ++it)
      backward_layer(ch, stage, *it, slot.micro_batch == last_micro_batch(slot.chunk));
    if (first_virtual) ends(ch, stage, costs.embedding, "embedding", true);
    if (first_virtual || last_virtual) root_reduce(ch, stage);
    stage_shard_reduce(ch, stage, slot.chunk);
  }
  // a zero-length marker closes every slot (and waits for pending side-stream work); a pair's
  // backward, for the pair's all-to-alls beside its compute too
  if (!slot.forward)
    for (std::size_t g = 0; g < ch.size(); ++g) {
      ch[g].pending.insert(ch[g].pending.end(), ep_beside[stage][g].begin(), ep_beside[stage][g].end());
      ep_beside[stage][g].clear();
    }
  compute(ch, stage, slot.forward ? "slot.fwd.end" : "slot.bwd.end", 0, out.categories.compute);
  const int idx = slot_index(stage, slot.micro_batch, slot.chunk, !slot.forward);
  for (const Chain& c : ch) {
    slot_first[idx].push_back(c.first);
    slot_last[idx].push_back(c.last);
  }
}

// Activations (forward) and their gradients (backward) between neighbouring stages;
// Megatron sends 1/t of the tensor from each TP rank (Narayanan et al. 2021 §4.1). Each
// pair of neighbours has its own link; across nodes the transfer also holds both NICs.
void Builder::add_pipeline_transfers() {
  if (pp == 1) return;
  const double bytes =
      pipeline_transfer_bytes(s.model, s.plan, s.training->micro_batch, s.training->seq_len, s.training->precision);
  const double seconds =
      collective_time_s(s.cluster, CollectiveOp::send_recv, pipeline_pair_layout(s.cluster, s.plan), bytes);
  const double fabric_slowdown = pipeline_fabric_slowdown(s.cluster, s.plan);
  const std::size_t gpus = stages[0].gpus.size();
  // links[direction][boundary][gpu]
  std::vector<std::vector<std::vector<ResourceId>>> links(2, std::vector<std::vector<ResourceId>>(pp));
  for (int i = 0; i < pp; ++i)
    for (std::size_t g = 0; g < gpus; ++g)
      for (int dir = 0; dir < 2; ++dir)
        links[dir][i].push_back(out.graph.add_link("pp" + std::to_string(i) + (dir ? "<-" : "->") +
                                                   std::to_string((i + 1) % pp) + "." + std::to_string(g)));
  out.pp_links.assign(gpus, {});
  for (int dir = 0; dir < 2; ++dir)
    for (int i = 0; i < pp; ++i)
      for (std::size_t g = 0; g < gpus; ++g) out.pp_links[g].push_back(links[dir][i][g]);
  const std::string send_fwd = std::string(op_names::kPpSend) + ".fwd", send_bwd = std::string(op_names::kPpSend) + ".bwd";
  auto transfer = [&](int from_stage, int to_stage, std::size_t g, ResourceId link, const char* name, TaskId from,
                      TaskId to) {
    std::vector<ResourceId> res{link};
    const StageStreams& a = stages[from_stage].gpus[g];
    const StageStreams& b = stages[to_stage].gpus[g];
    const bool crosses = is_full(fidelity) ? node_of(s, a.rank) != node_of(s, b.rank)
                                                    : pipeline_pair_layout(s.cluster, s.plan).nodes() > 1;
    if (a.nic >= 0 && crosses) {
      res.push_back(a.nic);
      if (b.nic != a.nic) res.push_back(b.nic);
      // across leaf switches, through both leaves' spine uplinks; across pods, through both
      // pods' core uplinks. Under hybrid folding both ends' leaves may be one class's link:
      // it then carries both ends' copies.
      std::vector<std::pair<ResourceId, int>> ups;  // each uplink once, with its copies
      auto through = [&](ResourceId up, int copies) {
        if (up < 0) return;
        const auto it = std::find_if(ups.begin(), ups.end(), [&](const auto& u) { return u.first == up; });
        if (it == ups.end()) ups.emplace_back(up, copies);
        else it->second += copies;
      };
      if (a.leaf != b.leaf) through(a.uplink, a.uplink_copies), through(b.uplink, b.uplink_copies);
      if (a.pod != b.pod) through(a.pod_uplink, a.pod_uplink_copies), through(b.pod_uplink, b.pod_uplink_copies);
      for (auto [up, copies] : ups) {
        res.push_back(up);
        if (copies > 1) uplink_copies.emplace_back(up, copies);
      }
    }
    // fast mode prices the fabric's fair share (full mode simulates the uplinks)
    const TaskId t = task(name, crosses && !is_full(fidelity) ? seconds * fabric_slowdown : seconds,
                          out.categories.pp_comm, res);
    out.graph.add_dependency(from, t);
    out.graph.add_dependency(t, to);
  };
  if (dualpipe()) {  // chunk 0's micro-batches go from rank i to i+1, chunk 1's from i+1 to i
    for (int i = 0; i + 1 < pp; ++i)
      for (int mb = 0; mb < m; ++mb) {
        const int c = mb < m / 2 ? 0 : 1, from = c == 0 ? i : i + 1, to = c == 0 ? i + 1 : i;
        const int fwd_from = slot_index(from, mb, c, false), fwd_to = slot_index(to, mb, c, false);
        const int bwd_from = slot_index(to, mb, c, true), bwd_to = slot_index(from, mb, c, true);
        for (std::size_t g = 0; g < gpus; ++g) {
          transfer(from, to, g, links[c][i][g], send_fwd.c_str(), slot_last[fwd_from][g], slot_first[fwd_to][g]);
          transfer(to, from, g, links[1 - c][i][g], send_bwd.c_str(), slot_last[bwd_from][g], slot_first[bwd_to][g]);
        }
      }
    return;
  }
  for (int mb = 0; mb < m; ++mb)
    for (int c = 0; c < v; ++c)
      for (int i = 0; i < pp; ++i) {
        if (i == pp - 1 && c == v - 1) continue;  // the last virtual stage sends nothing onward
        const int next = (i + 1) % pp, next_chunk = i == pp - 1 ? c + 1 : c;
        const int fwd_from = slot_index(i, mb, c, false), fwd_to = slot_index(next, mb, next_chunk, false);
        const int bwd_from = slot_index(next, mb, next_chunk, true), bwd_to = slot_index(i, mb, c, true);
        for (std::size_t g = 0; g < gpus; ++g) {
          transfer(i, next, g, links[0][i][g], send_fwd.c_str(), slot_last[fwd_from][g], slot_first[fwd_to][g]);
          transfer(next, i, g, links[1][i][g], send_bwd.c_str(), slot_last[bwd_from][g], slot_first[bwd_to][g]);
        }
      }
}

// The TP all-reduce of the stage's replicated, partially computed gradients (tp_grad_sum_s),
// blocking on the compute stream after the stage's backward and its DP reduces; the
// optimizer waits for it.
void Builder::add_tp_grad_sum(int stage) {
  const double seconds = tp_grad_sum_s(s.cluster, s.model, s.plan, s.stack, *s.training, stage);
  if (seconds <= 0) return;
  const StageRanks& sr = stages[stage];
  Chains sync(sr.gpus.size());
  for (std::size_t g = 0; g < sync.size(); ++g) {
    sync[g].pending = dp_grad_tasks[stage][g];
    sync[g].pending.push_back(out.graph.tasks_on(sr.gpus[g].compute).back());
  }
  comm(sync, stage, GroupKind::tp, std::string(op_names::kDpGradReduce) + ".tp", seconds, out.categories.tp_comm, nullptr);
  for (std::size_t g = 0; g < sync.size(); ++g) dp_grad_tasks[stage][g].push_back(sync[g].last);
}

// Gradient reduction in buckets (overlapped with the remaining backward when
// overlap_grad_reduce), the optimizer step, and the ZeRO parameter all-gather.
void Builder::add_data_parallel(int stage) {
  const StageRanks& sr = stages[stage];
  const StepCategories& c = out.categories;
  const bool sharded = s.plan.shards_optimizer();
  // buckets fill in backward order: the stage's layers, last first
  std::vector<std::int64_t> layers;
  for (int ch = v - 1; ch >= 0; --ch)
    for (auto it = chunk_layers[stage][ch].rbegin(); it != chunk_layers[stage][ch].rend(); ++it) layers.push_back(*it);
  struct Bucket {
    std::int64_t layer = 0;  // the last layer filled
    StageParams params;      // its dense and routed-expert parameters
  };
  std::vector<Bucket> buckets;
  Bucket filling;
  StageParams in_layers;
  // without overlap Megatron-core reduces the whole buffer as one bucket (bucket_size None)
  const std::int64_t limit =
      s.plan.overlap_grad_reduce ? dp_bucket_params(s.plan) : std::numeric_limits<std::int64_t>::max();
  for (std::size_t k = 0; k < layers.size(); ++k) {
    const StageParams layer = trainable_layer_params(s.model, s.plan, *s.training, s.model.is_moe_layer(layers[k]));
    filling.params.dense += layer.dense, filling.params.expert += layer.expert;
    in_layers.dense += layer.dense, in_layers.expert += layer.expert;
    if (filling.params.total() >= limit || k + 1 == layers.size()) {
      filling.layer = layers[k];
      buckets.push_back(filling);
      filling = {};
    }
  }
  // the embedding and head (this stage's share) fill the last bucket in backward order
  if (!buckets.empty()) {
    const StageParams all = trainable_stage_params(s.model, s.plan, *s.training, stage);
    buckets.back().params.dense += all.dense - in_layers.dense;
    buckets.back().params.expert += all.expert - in_layers.expert;
  }
  // a dp-group collective: one task on the members' dp streams (and NICs across nodes)
  auto group_task = [&](const RankGroup& group, const std::string& name, double seconds) {
    std::vector<ResourceId> res;
    for (int g : group.members) res.push_back(sr.gpus[g].dp);
    add_nics(sr, group, res);
    return task(name, seconds, c.dp_comm, res);
  };
  if (s.plan.dp_group_size() > 1 && !sharded_grads()) {  // ZeRO 2/3 reduced theirs in every backward
    for (const Bucket& b : buckets) {
      const std::int64_t layer = b.layer;
      // dense gradients over the data-parallel group, the experts' over theirs
      const double seconds = over_dp_groups(s.cluster, s.plan, static_cast<double>(b.params.dense),
                                            static_cast<double>(b.params.expert), [&](const GroupLayout& g, double n) {
                                              return stack_gradient_reduce_s(s.cluster, s.plan, s.stack, g, n,
                                                                             state_dtype(), low_rank);
                                            });
      for (const RankGroup& group : sr.dp) {
        // after the whole backward (no overlap) the first bucket waits for the slowest rank
        const double wait = s.plan.overlap_grad_reduce ? 0 : straggler_wait(stage, group.members, group_ranks(GroupKind::dp));
        const TaskId t = group_task(group, std::string(op_names::kDpGradReduce) + ".layer" + std::to_string(layer), seconds + wait);
        for (int g : group.members) {
          const TaskId ready = s.plan.overlap_grad_reduce ? last_backward.at({stage, layer})[g]
                                                          : out.graph.tasks_on(sr.gpus[g].compute).back();
          out.graph.add_dependency(ready, t);
          dp_grad_tasks[stage][g].push_back(t);
        }
      }
    }
  }
  add_tp_grad_sum(stage);
  Chains chains(sr.gpus.size());
  const std::vector<TaskId> opt =
      compute(chains, stage, op_names::kOptimizerStep, optimizer_step_s(s, stage), c.optimizer);
  for (std::size_t g = 0; g < sr.gpus.size(); ++g)
    for (TaskId r : dp_grad_tasks[stage][g]) out.graph.add_dependency(r, opt[g]);
  std::vector<std::vector<TaskId>> gathers(sr.gpus.size());
  if (sharded && s.plan.dp_group_size() > 1 && !zero3()) {
    // the updated shards are gathered back; overlapped, the gather happens during the next
    // step's forward, so this step waits only for its first bucket (Megatron overlap_param_gather)
    const int pbytes = param_element_bytes(state_dtype());
    for (const Bucket& b : buckets) {
      const std::int64_t layer = b.layer;
      const double seconds = over_dp_groups(s.cluster, s.plan, static_cast<double>(b.params.dense),
                                            static_cast<double>(b.params.expert), [&](const GroupLayout& g, double n) {
                                              return collective_time_s(s.cluster, CollectiveOp::all_gather, g, n * pbytes);
                                            });
      for (const RankGroup& group : sr.dp) {
        const TaskId t = group_task(group, std::string(op_names::kDpParamGather) + ".layer" + std::to_string(layer), seconds);
        for (int g : group.members) out.graph.add_dependency(opt[g], t), gathers[g].push_back(t);
      }
      if (s.plan.overlap_param_gather) break;
    }
  }
  // the grads are zeroed for the next step once the optimizer has read them and, without
  // overlap, the shards are back (Megatron's zero_grad_buffer opens a step, after the
  // last one's synchronous gather)
  const std::vector<TaskId> zero =
      compute(chains, stage, op_names::kOptimizerZeroGrad, op_time_s(s.cluster.gpu, zero_grad_op(s, stage)), c.optimizer);
  if (s.plan.overlap_param_gather) return;
  for (std::size_t g = 0; g < sr.gpus.size(); ++g)
    for (TaskId t : gathers[g]) out.graph.add_dependency(t, zero[g]);
}

}  // namespace

std::vector<ComputeOp> optimizer_shard_ops(const StackSpec& stack, const PlanKnobs& plan, const TrainingWorkload& t,
                                           double shard) {
  // the update's bytes (models/optimizer_state.hpp optimizer_update_bytes_per_param)
  ComputeOp update;
  update.kind = ComputeKind::optimizer;
  update.kernel = t.optimizer == Optimizer::adam ? kernel_names::kAdamw : kernel_names::kSgd;
  update.dtype = t.precision;  // of the grads it reads (the masters are fp32)
  const double grad_element = grad_element_bytes(dp_gradient_dtype(stack, t.precision));
  const bool foreach_adamw = stack.optimizer_foreach && t.optimizer == Optimizer::adam;
  const OptimizerStateDtypes states = optimizer_state_dtypes(plan);  // foreach: plain fp32 (refused otherwise)
  update.bytes = (foreach_adamw ? foreach_adamw_update_bytes_per_param(grad_element)
                                : optimizer_update_bytes_per_param(t.optimizer, grad_element, states)) *
                 shard;
  if (t.precision == Dtype::fp32) return {update};
  // Mixed precision: the updated fp32 masters are then copied into the model's 16-bit
  // weights, a pass of its own (Megatron's _copy_main_params_to_model_params, after the
  // optimizer's step): 4 bytes read and 2 written per parameter of the shard
  ComputeOp cast;
  cast.kind = ComputeKind::elementwise;
  cast.kernel = kernel_names::kCast;
  cast.dtype = t.precision;
  cast.bytes = static_cast<double>(state_element_bytes(states.main_params) + 2) * shard;  // master read, 16-bit written
  return {update, cast};
}

// One 4-byte all-reduce (latency) over each of the data-, tensor- and pipeline-parallel groups
// of more than one rank: a global norm's or a finiteness flag's.
namespace {
double scalar_all_reduce_s(const ClusterSpec& cluster, const Plan& plan) {
  double seconds = 0;
  for (ParallelGroup g : {ParallelGroup::dp, ParallelGroup::tp, ParallelGroup::pp}) {
    const GroupLayout layout = group_layout(cluster, plan, g);
    if (layout.ranks > 1) seconds += collective_time_s(cluster, CollectiveOp::all_reduce, layout, 4.0);
  }
  return seconds;
}
}  // namespace

// Gradient clipping (training.optimizer.grad_clip; Megatron clip_grad_norm_fp32): a pass
// reading this GPU's gradient shard for its squared norm, the norm's all-reduce over the
// data-parallel, tensor- and pipeline-parallel groups (4 bytes: latency), and a pass
// scaling the grads (read and written), before the update.
double grad_clip_s(const ClusterSpec& cluster, const StackSpec& stack, const Plan& plan, const TrainingWorkload& t,
                   double shard) {
  if (t.optim.grad_clip <= 0) return 0;
  ComputeOp passes;
  passes.kind = ComputeKind::elementwise;
  passes.kernel = kernel_names::kGradNorm;
  passes.dtype = t.precision;
  passes.bytes = 3.0 * grad_element_bytes(dp_gradient_dtype(stack, t.precision)) * shard;
  return op_time_s(cluster.gpu, passes) + scalar_all_reduce_s(cluster, plan);
}

// The reference executor's check of its gradient shard for NaN/Inf before every update
// (exec/train/trainer.cpp stop_if_not_finite, or the fp16 loss scaler's overflow check): a
// read of the shard's gradients and a 4-byte max all-reduce over the world (priced as
// grad_clip_s prices its norm's, over the data-, tensor- and pipeline-parallel groups).
// Priced only on a device that lists the scan's measured rate (kernel_efficiency
// "finite_check", which `twinsim calibrate` writes for the host it measured): GPU stacks
// check the loss or the clipped norm, not every gradient (Megatron-core's
// check_for_nan_in_loss_and_grad), and a catalog GPU lists none.
double finite_check_s(const ClusterSpec& cluster, const StackSpec& stack, const Plan& plan, const TrainingWorkload& t,
                      double shard) {
  if (!cluster.gpu.kernel_efficiency.contains(std::string(kernel_names::kFiniteCheck))) return 0;
  ComputeOp scan;
  scan.kind = ComputeKind::elementwise;
  scan.kernel = kernel_names::kFiniteCheck;
  scan.dtype = t.precision;
  scan.bytes = grad_element_bytes(dp_gradient_dtype(stack, t.precision)) * shard;
  return op_time_s(cluster.gpu, scan) + scalar_all_reduce_s(cluster, plan);
}

namespace {

// ZeRO-Offload's step on the host for one GPU's shard (Ren et al. 2021, §4.2, Fig. 3),
// before the stack's own measured path is weighed against it.
double offloaded_host_path_s(const ClusterSpec& cluster, const StackSpec& stack, const Plan& plan,
                             const TrainingWorkload& t, double shard) {
  // The CPU's Adam (DeepSpeed's vectorised CPU-Adam, §5.1) reads and writes the fp32
  // weights and moments, reads the gradient and writes the 16-bit copy: the GPU's bytes,
  // bound by the host's DRAM (its share for the ranks updating at once: a lower bound) or
  // by the CPU's measured Adam rate (cluster.host.adam_ns_per_param), whichever is slower
  const double element = t.precision == Dtype::fp32 ? 0.0 : param_element_bytes(t.precision);
  const double grad_element = grad_element_bytes(dp_gradient_dtype(stack, t.precision));
  const double host_bytes = (optimizer_update_bytes_per_param(t.optimizer, grad_element) + element) * shard;
  const double adam_rate_s = t.optimizer == Optimizer::adam ? shard * cluster.host.adam_s_per_param : 0.0;
  const double update = std::max(host_bytes / host_memory_share_Bps(cluster, plan), adam_rate_s);
  // the gradients stream to the host during the backward, overlapped with it, when they are
  // reduced there (plan.overlap_grad_reduce); reduced after it, their copy waits for the
  // reduction and the update for the copy (exec/train/zero.cpp offloaded_update)
  const double grads_to_host = plan.overlap_grad_reduce ? 0.0 : grad_element * shard / cluster.host.d2h_Bps;
  // the updated weights go back over PCIe before the next forward (with plan.offload_params
  // they live on the host: the update writes them in place)
  const double weight_bytes = shard * (t.precision == Dtype::fp32 ? 4.0 : param_element_bytes(t.precision));
  const double copy_back = plan.offload_params ? 0.0 : weight_bytes / cluster.host.h2d_Bps;
  return grads_to_host + update + copy_back;
}

}  // namespace

double optimizer_shard_s(const ClusterSpec& cluster, const StackSpec& stack, const Plan& plan, const TrainingWorkload& t,
                         double shard) {
  const double clip = grad_clip_s(cluster, stack, plan, t, shard) + finite_check_s(cluster, stack, plan, t, shard);
  if (!plan.offload_optimizer) {
    double seconds = 0;
    for (const ComputeOp& op : optimizer_shard_ops(stack, plan, t, shard)) seconds += op_time_s(cluster.gpu, op);
    return clip + seconds;
  }
  // ZeRO-Infinity (plan.offload_device: nvme): the states and the fp32 gradients come from
  // the drives before the update and the states (and offloaded weights) go back after
  const double weight_bytes = shard * (t.precision == Dtype::fp32 ? 4.0 : param_element_bytes(t.precision));
  const double states = shard * static_cast<double>(offloaded_optimizer_bytes_per_param(t.precision, t.optimizer));
  const double swap = nvme_optimizer_swap_s(cluster, plan, states, 4.0 * shard, weight_bytes);
  // the stack's own host path, measured whole (StackSpec::offload_update_s_per_param), where
  // it is slower than the host path priced by its parts
  return clip +
         std::max(offloaded_host_path_s(cluster, stack, plan, t, shard), shard * stack.offload_update_s_per_param) +
         swap;
}

double tp_grad_sum_s(const ClusterSpec& cluster, const ModelSpec& model, const Plan& plan, const StackSpec& stack,
                     const TrainingWorkload& t, int stage) {
  if (plan.tp < 2 || t.lora) return 0;
  const StageLayers layers = stage_layers(model, plan, stage);
  const StagePieces pieces{layers.dense, layers.moe, stage == 0, stage == plan.pp - 1};
  const std::int64_t params = tp_summed_grad_params(model, plan.sequence_parallel, pieces);
  if (params == 0) return 0;
  const double bytes = static_cast<double>(params) * grad_element_bytes(dp_gradient_dtype(stack, t.precision));
  // ZeRO-2/3 reduce-scatter (and drop) the grads after every micro-batch's backward: the
  // partial ones are summed before each (exec/train/zero.cpp), not once a step
  const double calls = sharded_grads(plan) ? static_cast<double>(t.micro_batches(plan.dp)) : 1.0;
  return calls * collective_time_s(cluster, CollectiveOp::all_reduce, group_layout(cluster, plan, ParallelGroup::tp), bytes);
}

double optimizer_step_s(const Scenario& s, int stage) {
  const StageParams p = trainable_stage_params(s.model, s.plan, *s.training, stage);
  // DeepSpeed <= 0.5 gathers the tensors it keeps gathered again after the update
  return optimizer_shard_s(s.cluster, s.stack, s.plan, *s.training,
                           sharded_params_per_gpu(p.dense, p.expert, s.plan, s.plan.shards_optimizer())) +
         zero3_persistent_gather_s(s.cluster, s.plan, s.stack, stage_layers(s.model, s.plan, stage).total());
}

double optimizer_step_hbm_bytes(const Scenario& s, int stage) {
  if (s.plan.offload_optimizer) return 0;  // the CPU runs the update
  const StageParams p = trainable_stage_params(s.model, s.plan, *s.training, stage);
  const double shard = sharded_params_per_gpu(p.dense, p.expert, s.plan, s.plan.shards_optimizer());
  double bytes = 0;
  for (const ComputeOp& op : optimizer_shard_ops(s.stack, s.plan, *s.training, shard)) bytes += op.bytes;
  return bytes;
}

ComputeOp zero_grad_op(const Scenario& s, int stage) {
  // the gradients this GPU keeps between steps: all of the stage's, or its shard under ZeRO 2/3
  const StageParams p = trainable_stage_params(s.model, s.plan, *s.training, stage);
  const double kept = sharded_params_per_gpu(p.dense, p.expert, s.plan, s.plan.shards_grads());
  ComputeOp zero;
  zero.kind = ComputeKind::elementwise;
  zero.kernel = kernel_names::kZero;
  zero.dtype = s.training->precision;
  zero.bytes = kept * grad_element_bytes(dp_gradient_dtype(s.stack, s.training->precision));  // written once
  return zero;
}

bool sharded_grads(const Plan& plan) { return plan.shards_grads() && plan.dp_group_size() > 1; }

bool sharded_grads_whole_stage(const Plan& plan) { return sharded_grads(plan) && !plan.overlap_grad_reduce; }

bool zero3_whole_stage(const Plan& plan) { return plan.shards_params() && sharded_grads_whole_stage(plan); }

ShardedStageComm sharded_stage_comm(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack,
                                    Dtype state, const StageParams& params, const LowRankShare& low_rank) {
  if (!sharded_grads_whole_stage(plan)) return {};
  const auto dense = static_cast<double>(params.dense), expert = static_cast<double>(params.expert);
  ShardedStageComm c;
  if (zero3_whole_stage(plan))
    c.gather_s = over_dp_groups(cluster, plan, dense, expert, [&](const GroupLayout& g, double n) {
      return collective_time_s(cluster, CollectiveOp::all_gather, g, n * param_element_bytes(state));
    });
  c.reduce_s = over_dp_groups(cluster, plan, dense, expert, [&](const GroupLayout& g, double n) {
    return stack_gradient_reduce_s(cluster, plan, stack, g, n, state, low_rank);
  });
  return c;
}

StageParams chunk_params_per_gpu(const ModelSpec& model, const Plan& plan, int stage, int chunk) {
  if (plan.schedule == Schedule::dualpipe)  // the rank's own stage, or the mirror's (pipeline_split.hpp)
    return chunk_params_per_gpu(model, one_stage_a_rank(plan), chunk == 0 ? stage : dualpipe_mirror_stage(plan, stage),
                                0);
  const StageParams dense = layer_params_on_gpu(model, plan, false);
  const StageParams moe = model.moe ? layer_params_on_gpu(model, plan, true) : StageParams{};
  const std::int64_t first = chunk_first_layer(model, plan, stage, chunk);
  const std::int64_t count = chunk_layer_count(model, plan, stage, chunk);
  StageParams p;
  for (std::int64_t l = first; l < first + count; ++l) {
    const StageParams& layer = model.is_moe_layer(l) ? moe : dense;
    p.dense += layer.dense, p.expert += layer.expert;
  }
  // the stage's other parameters (embedding, final norm, head, MTP) run in its first
  // chunk on stage 0 and its last on the last stage
  const bool holds_rest = (stage == 0 && chunk == 0) || (stage == plan.pp - 1 && stage > 0 && chunk == plan.virtual_stages - 1);
  if (!holds_rest) return p;
  const StageParams rest = stage_rest_params(model, plan, stage);
  p.dense += rest.dense;
  p.expert += rest.expert;
  return p;
}

std::int64_t stage_params_per_gpu(const Scenario& s, int stage) {
  return stage_params(s.model, s.plan, stage).total();  // the memory model's count
}

StepCosts price_step(const Scenario& s) {
  StepCosts c;
  int dense = -1, moe = -1;
  for (std::int64_t l = 0; l < s.model.layers; ++l) {
    int& slot = s.model.is_moe_layer(l) ? moe : dense;
    if (slot < 0) {
      slot = static_cast<int>(c.layers.size());
      c.layers.push_back(cost_layer(s, l));
    }
    c.layer_cost_index.push_back(slot);
  }
  c.embedding = cost_embedding(s);
  c.head = cost_head(s);
  return c;
}

std::string_view to_string(Fidelity f) {
  switch (f) {
    case Fidelity::fast: return "fast";
    case Fidelity::full: return "full";
    case Fidelity::full_per_rank: return "full-per-rank";
  }
  return "fast";
}

std::optional<Fidelity> fidelity_from_string(std::string_view name) {
  for (Fidelity f : {Fidelity::fast, Fidelity::full, Fidelity::full_per_rank})
    if (to_string(f) == name) return f;
  return std::nullopt;
}

StepGraph build_step_graph(const Scenario& s, const StepCosts& costs, Fidelity fidelity) {
  Builder b(s, costs, fidelity);
  b.build();
  return std::move(b.out);
}

}  // namespace twinsim
