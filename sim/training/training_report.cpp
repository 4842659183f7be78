#include "sim/training/training_report.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "models/head_ops.hpp"
#include "models/op_names.hpp"
#include "sim/cost/straggler_wait.hpp"
#include "sim/engine/chrome_trace.hpp"
#include "sim/engine/simulator.hpp"

namespace twinsim {

namespace {

// Breakdown of stage `i`'s GPU: busy time of its compute stream by category; idle time
// exposed to communication on its side streams; the rest of the idle time is bubble.
TimeBreakdown stage_breakdown(const StepGraph& g, const engine::Timeline& tl, int i) {
  const StageStreams& st = g.stages[i];
  const StepCategories& c = g.categories;
  TimeBreakdown b;
  for (engine::TaskId t : g.graph.tasks_on(st.compute)) {
    // a task's time includes what NCCL kernels beside it cost it (engine interference)
    const double d = g.graph.duration(t) + (tl.slowed_s.empty() ? 0.0 : tl.slowed_s[t]);
    const engine::CategoryId cat = g.graph.category_of(t);
    if (cat == c.compute) b.compute_s += d;
    else if (cat == c.recompute) b.recompute_s += d;
    else if (cat == c.tp_comm) b.tp_comm_s += d;
    else if (cat == c.ep_comm) b.ep_comm_s += d;
    else if (cat == c.optimizer) b.optimizer_s += d;
    else if (cat == c.cp_comm) b.cp_comm_s += d;
    else if (cat == c.dp_comm) b.dp_comm_exposed_s += d;  // blocking (ZeRO-3 without overlap)
  }
  std::vector<engine::ResourceId> watched{st.tp, st.cp, st.dp, st.gather};
  if (st.host_link >= 0) watched.push_back(st.host_link);
  if (st.ep >= 0) watched.push_back(st.ep);  // plan.moe_a2a_overlap's all-to-alls beside the compute
  const std::vector<engine::ResourceId> covering{st.compute};
  const std::vector<double> exposed = engine::exposed_times(g.graph, tl, watched, covering);
  b.dp_comm_exposed_s += exposed[c.dp_comm];
  b.offload_exposed_s += exposed[c.offload];
  b.tp_comm_s += exposed[c.tp_comm];
  b.cp_comm_s += exposed[c.cp_comm];
  b.ep_comm_s += exposed[c.ep_comm];
  b.pp_bubble_s = tl.makespan_s - b.sum();
  if (b.pp_bubble_s < 0 && b.pp_bubble_s > -1e-9 * tl.makespan_s) b.pp_bubble_s = 0;
  return b;
}

// The stage's data-parallel collectives under the executor's names (exec/train/zero.cpp):
// gradient reductions and parameter gathers, from the reported GPU's tasks (their
// durations include the straggler wait a blocking collective absorbs).
void add_dp_ops(const StepGraph& g, int stage, std::vector<OpPrediction>& ops) {
  const StageStreams& st = g.stages[stage];
  OpPrediction reduce{op_names::kDpGradReduce, 0, 0}, gather{op_names::kDpParamGather, 0, 0};
  for (engine::ResourceId r : {st.compute, st.dp, st.gather})
    for (engine::TaskId t : g.graph.tasks_on(r)) {
      if (g.graph.category_of(t) != g.categories.dp_comm) continue;
      const std::string_view name = g.graph.name(t);
      OpPrediction* op = name.find("grad_reduce") != std::string_view::npos ? &reduce
                         : name.find("gather") != std::string_view::npos    ? &gather
                                                                            : nullptr;
      if (op == nullptr) continue;
      op->time_s += g.graph.duration(t);  // a total until divided below
      ++op->count;
    }
  for (OpPrediction* op : {&reduce, &gather})
    if (op->count > 0) ops.push_back({op->name, op->time_s / op->count, op->count});
}

// A blocking collective of a layer also waits for the group's slowest member
// (sim/training/step_graph.cpp prices the wait per layer pass, on the pass's collectives
// together). The op table gives each TP / EP collective of a pass its own share
// (sim/cost/straggler_wait.hpp), so the shares add up to the step graph's wait and a
// measured collective, which includes its wait, compares like for like.
void add_pass_straggler_waits(std::vector<OpTime>& ops, bool backward, const Scenario& s) {
  std::vector<double> times;
  std::vector<WaitRole> roles;
  std::vector<OpTime*> order;  // the pass's run order: backward runs the ops in reverse
  for (std::size_t k = 0; k < ops.size(); ++k) order.push_back(&ops[backward ? ops.size() - 1 - k : k]);
  for (const OpTime* op : order) {
    const double comm = backward ? op->dgrad_s : op->fwd_s;
    const bool blocking = op->category == TimeCategory::ep_comm ||
                          (op->category == TimeCategory::tp_comm && !s.plan.tp_comm_overlap);
    if (op->category == TimeCategory::compute) {
      times.push_back(backward ? op->dgrad_s + op->wgrad_s : op->fwd_s);
      roles.push_back(WaitRole::compute);
    } else {
      times.push_back(comm);
      roles.push_back(blocking && comm > 0 ? WaitRole::collective : WaitRole::other);
    }
  }
  add_straggler_waits(times, roles, s.cluster.straggler);
  for (std::size_t k = 0; k < order.size(); ++k)
    if (roles[k] == WaitRole::collective) (backward ? order[k]->dgrad_s : order[k]->fwd_s) = times[k];
}

std::vector<OpTime> with_straggler_waits(std::vector<OpTime> ops, const Scenario& s) {
  add_pass_straggler_waits(ops, false, s);
  add_pass_straggler_waits(ops, true, s);
  return ops;
}

std::vector<OpPrediction> op_table(const Scenario& s, const StepCosts& costs, const StepGraph& g, int stage) {
  const int layers = s.plan.stage_layers[stage];
  const int m = static_cast<int>(s.training->micro_batches(s.plan.dp));
  std::vector<OpPrediction> ops;
  std::int64_t first_layer = 0;
  for (int i = 0; i < stage; ++i) first_layer += s.plan.stage_layers[i];
  // An op both layer kinds run (a MoE model's attention and norms) is one row: its count
  // summed, its time and bytes the mean over the occurrences.
  auto push = [&ops](OpPrediction p) {
    for (OpPrediction& o : ops)
      if (o.name == p.name) {
        const double n = o.count + p.count;
        o.time_s = (o.time_s * o.count + p.time_s * p.count) / n;
        o.hbm_bytes = (o.hbm_bytes * o.count + p.hbm_bytes * p.count) / n;
        o.count += p.count;
        o.extrapolated = o.extrapolated || p.extrapolated;
        return;
      }
    ops.push_back(std::move(p));
  };
  auto add = [&push, &s](const LayerCost& lc, int count, bool recompute) {
    for (const OpTime& op : with_straggler_waits(lc.ops, s)) {
      const bool x = op.extrapolated;
      const int k = op.category == TimeCategory::compute ? 1 : 0;  // launches count compute ops only
      using op_names::OpPass, op_names::op_name;
      push({op_name(-1, op.name, OpPass::fwd), op.fwd_s, count, x, op.fwd_bytes, k * op.fwd_launches});
      if (op.dgrad_s > 0)
        push({op_name(-1, op.name, OpPass::bwd_dgrad), op.dgrad_s, count, x, op.dgrad_bytes, k * op.dgrad_launches});
      if (op.wgrad_s > 0)
        push({op_name(-1, op.name, OpPass::bwd_wgrad), op.wgrad_s, count, x, op.wgrad_bytes, k * op.wgrad_launches});
      if (recompute && op.recomputed)
        push({op.name + ".recompute", op.fwd_s * op.recompute_share, count, x, op.fwd_bytes * op.recompute_share,
              k * op.fwd_launches});
    }
  };
  // the stage's layers by the cost that prices them (a MoE model's dense and MoE layers)
  std::vector<int> layers_priced_by(costs.layers.size(), 0);
  for (std::int64_t l = first_layer; l < first_layer + layers; ++l) ++layers_priced_by[costs.layer_cost_index[l]];
  for (std::size_t c = 0; c < costs.layers.size(); ++c)
    if (layers_priced_by[c] > 0) add(costs.layers[c], layers_priced_by[c] * m, true);
  // the embedding runs on the first stage, the head (norm, logits, loss) on the last
  if (stage == 0) add(costs.embedding, m, false);
  if (stage == s.plan.pp - 1) add(costs.head, m, false);
  // the optimizer's two ops, under the executor's names (exec/train/trainer.cpp)
  const ComputeOp zero = zero_grad_op(s, stage);
  ops.push_back({op_names::kOptimizerZeroGrad, op_time_s(s.cluster.gpu, zero), 1, false, zero.bytes, 1});
  ops.push_back({op_names::kOptimizerStep, optimizer_step_s(s, stage), 1, false, optimizer_step_hbm_bytes(s, stage),
                 s.plan.offload_optimizer ? 0 : 1});
  add_dp_ops(g, stage, ops);
  return ops;
}

// A layer task in the trace shows the ops it stands for, named as the executor names them
// ("layer3.attn.qkv.fwd"): the forward in order, the backward in reverse with dgrad then
// wgrad, the recompute as the recomputed forward ops.
engine::TaskExpansion layer_op_expansion(const StepGraph& g, const StepCosts& costs) {
  return [&g, &costs](engine::TaskId t, std::vector<std::pair<std::string, double>>& parts) {
    const TaskOrigin& o = g.origin[t];
    if (o.cost < 0 || o.pass == LayerPass::none) return;
    using op_names::OpPass, op_names::op_name;
    const std::vector<OpTime>& ops = costs.layers[o.cost].ops;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      const OpTime& op = o.pass == LayerPass::bwd ? ops[ops.size() - 1 - k] : ops[k];
      if (op.category != TimeCategory::compute) continue;
      if (o.pass == LayerPass::fwd) parts.push_back({op_name(o.layer, op.name, OpPass::fwd), op.fwd_s});
      if (o.pass == LayerPass::recompute && op.recomputed)
        parts.push_back({op_name(o.layer, op.name, OpPass::recompute), op.fwd_s * op.recompute_share});
      if (o.pass == LayerPass::bwd) {
        if (op.dgrad_s > 0) parts.push_back({op_name(o.layer, op.name, OpPass::bwd_dgrad), op.dgrad_s});
        if (op.wgrad_s > 0) parts.push_back({op_name(o.layer, op.name, OpPass::bwd_wgrad), op.wgrad_s});
      }
    }
  };
}

// Busy fractions of stage `i`'s reported GPU, from the timeline and the op table.
Utilization stage_utilization(const Scenario& s, const StepGraph& g, const StepCosts& costs,
                              const engine::Timeline& tl, int i) {
  const StageStreams& st = g.stages[i];
  const double step = tl.makespan_s;
  Utilization u;
  u.compute = tl.resource_busy_s[st.compute] / step;
  const engine::ResourceId dp_streams[] = {st.dp, st.gather};
  u.dp_link = engine::busy_union(g.graph, tl, dp_streams) / step;
  double tp_busy = tl.resource_busy_s[st.tp];
  for (engine::TaskId t : g.graph.tasks_on(st.compute))
    if (g.graph.category_of(t) == g.categories.tp_comm) tp_busy += g.graph.duration(t);
  u.tp_link = tp_busy / step;
  // the links of the stage's two boundaries (named "pp<boundary>->..." and "pp<boundary><-...")
  const std::string after = "pp" + std::to_string(i), before = "pp" + std::to_string((i + s.plan.pp - 1) % s.plan.pp);
  for (engine::ResourceId r = 0; r < g.graph.num_resources(); ++r) {
    const std::string& name = g.graph.resource(r).name;
    for (const std::string& prefix : {after, before})
      if (name.rfind(prefix + "-", 0) == 0 || name.rfind(prefix + "<", 0) == 0)
        u.pp_link = std::max(u.pp_link, tl.resource_busy_s[r] / step);
  }
  const double m = static_cast<double>(s.training->micro_batches(s.plan.dp));
  double bytes = 0;
  std::int64_t first = 0;
  for (int k = 0; k < i; ++k) first += s.plan.stage_layers[k];
  for (std::int64_t l = first; l < first + s.plan.stage_layers[i]; ++l) {
    const LayerCost& lc = costs.layers[costs.layer_cost_index[l]];
    bytes += m * (lc.fwd_bytes() + lc.bwd_bytes());
  }
  u.hbm_bandwidth = bytes / (step * s.cluster.gpu.hbm_bandwidth_Bps);
  return u;
}

// A trace shows at most this many GPUs: a 512-GPU Llama 3 405B step with its ops is about
// 280 MB of JSON. Past it, data-parallel replica 0 of every stage is written (the GPUs,
// their NICs, uplinks and pipeline links), and the trace says so.
constexpr int kTracedGpus = 1024;

struct TraceChoice {
  engine::TraceNotes notes;
  engine::TraceSelection shown;  // empty: everything
};

// What the trace shows: the GPUs the engine ran, which GPUs of the plan they stand for,
// and, past kTracedGpus, the sample written.
TraceChoice trace_choice(const Scenario& s, const StepGraph& g, Fidelity fidelity) {
  const int world = static_cast<int>(s.plan.world_size());
  const int per_replica = s.plan.tp * s.plan.cp;
  const int replicas = static_cast<int>(g.ranks.front().size()) / per_replica;
  std::string covers = "every GPU of the plan, each a process named by its rank";
  if (fidelity == Fidelity::fast)
    covers = "one GPU per pipeline stage (process i: stage i), standing for all its tensor-, context- and "
             "data-parallel peers";
  else if (replicas == 1)
    covers = "data-parallel replica 0 of every stage (its GPUs keep their ranks); every other replica runs its "
             "timeline exactly (full mode's symmetry, sim/training/replica_symmetry.hpp)";
  else if (g.simulated_gpus < world && static_cast<int>(g.ranks.front().back().rank) / per_replica != replicas - 1)
    covers = std::to_string(replicas) + " data-parallel replicas of every stage, one per class of replicas alike on "
             "the fabric (their GPUs keep their ranks); every other replica runs its class's timeline exactly (full "
             "mode's hybrid folding, sim/training/replica_classes.hpp)";
  else if (g.simulated_gpus < world)
    covers = "data-parallel replicas 0.." + std::to_string(replicas - 1) + " of every stage (their GPUs keep their "
             "ranks); replica d + j*" + std::to_string(replicas) + " runs replica d's timeline exactly (full mode's "
             "symmetry, sim/training/replica_symmetry.hpp)";
  TraceChoice c;
  if (is_full(fidelity) && g.simulated_gpus > kTracedGpus) {
    c.shown.assign(static_cast<std::size_t>(g.graph.num_resources()), 0);
    for (const std::vector<StageStreams>& stage : g.ranks)
      for (int i = 0; i < per_replica; ++i)
        for (engine::ResourceId r : {stage[i].compute, stage[i].tp, stage[i].cp, stage[i].dp, stage[i].gather,
                                     stage[i].nic, stage[i].uplink, stage[i].pod_uplink})
          if (r >= 0) c.shown[r] = 1;
    for (int i = 0; i < per_replica && i < static_cast<int>(g.pp_links.size()); ++i)
      for (engine::ResourceId r : g.pp_links[i]) c.shown[r] = 1;
    covers = "sampled: the GPUs of data-parallel replica 0 of every stage (" + std::to_string(per_replica * s.plan.pp) +
             " of the " + std::to_string(g.simulated_gpus) + " simulated, past the trace's limit of " +
             std::to_string(kTracedGpus) + "), with their NICs, uplinks and pipeline links; the simulated GPUs: " +
             covers;
  }
  c.notes = {{"gpus", std::to_string(world)}, {"simulated_gpus", std::to_string(g.simulated_gpus)}, {"covers", covers}};
  return c;
}

}  // namespace

double model_flops_per_step(const Scenario& s) {
  // the whole model on one sequence: every degree 1
  Plan whole = s.plan;
  whole.tp = whole.cp = whole.ep = 1;
  whole.sequence_parallel = false;
  whole.recompute = Recompute::none;
  const MicroBatchShape one{1, s.training->seq_len, s.training->precision};
  // the model's FLOPs route tokens evenly: an imbalance slows the busiest GPU, adds no work
  ModelSpec balanced = s.model;
  if (balanced.moe) balanced.moe->imbalance = 1.0, balanced.moe->capacity_factor = 0;  // nor drops nor padding
  double per_sequence = 0;
  for (std::int64_t l = 0; l < s.model.layers; ++l)
    for (const LayerOp& op : build_layer_ops(balanced, l, whole, one))
      per_sequence += op.fwd_flops + op.dgrad_flops + op.wgrad_flops;
  for (const LayerOp& op : build_head_ops(s.model, whole, one))
    per_sequence += op.fwd_flops + op.dgrad_flops + op.wgrad_flops;
  return per_sequence * static_cast<double>(s.training->global_batch);
}

namespace {

TrainingPrediction predict_from(const Scenario& s, const StepCosts& costs, const StepGraph& g,
                                const engine::Timeline& tl);

void write_trace(const std::string& path, const Scenario& s, const StepCosts& costs, const StepGraph& g,
                 const engine::Timeline& tl, Fidelity fidelity) {
  const TraceChoice c = trace_choice(s, g, fidelity);
  engine::write_chrome_trace(path, g.graph, tl, layer_op_expansion(g, costs), c.notes, c.shown);
}

}  // namespace

TrainingPrediction predict_training(const Scenario& s, const std::string& trace_path, Fidelity fidelity) {
  const StepCosts costs = price_step(s);
  const StepGraph g = build_step_graph(s, costs, fidelity);
  const engine::Timeline tl = engine::simulate(g.graph);
  if (!trace_path.empty()) write_trace(trace_path, s, costs, g, tl, fidelity);
  return predict_from(s, costs, g, tl);
}

TrainingPrediction predict_training(const Scenario& s, const std::string& trace_path, Fidelity fidelity,
                                    engine::Exchange& exchange) {
  const StepCosts costs = price_step(s);
  const StepGraph g = build_step_graph(s, costs, fidelity);
  // ranks are numbered stage by stage (fast mode: the stage itself); process p takes
  // stages [p * pp / n, (p + 1) * pp / n)
  const int per_stage = fidelity == Fidelity::fast ? 1 : s.plan.tp * s.plan.cp * s.plan.dp;
  const int n = exchange.processes(), pp = s.plan.pp;
  const engine::Timeline tl = engine::simulate(g.graph, exchange, [=](int rank) {
    const int stage = rank / per_stage;
    for (int p = n - 1; p > 0; --p)
      if (stage >= p * pp / n) return p;
    return 0;
  });
  if (!trace_path.empty() && exchange.process() == 0) write_trace(trace_path, s, costs, g, tl, fidelity);
  return predict_from(s, costs, g, tl);
}

namespace {

TrainingPrediction predict_from(const Scenario& s, const StepCosts& costs, const StepGraph& g,
                                const engine::Timeline& tl) {

  TrainingPrediction p;
  p.step_s = tl.makespan_s;
  p.tasks = static_cast<std::size_t>(g.graph.num_tasks());
  p.events = tl.events;
  p.simulated_gpus = g.simulated_gpus;
  for (const LayerCost& layer : costs.layers) p.gemm_clock = std::min(p.gemm_clock, layer.gemm_clock);
  for (int i = 0; i < s.plan.pp; ++i) p.stage_breakdowns.push_back(stage_breakdown(g, tl, i));
  // report the busiest GPU: the bottleneck stage
  for (int i = 1; i < s.plan.pp; ++i) {
    const TimeBreakdown& a = p.stage_breakdowns[i];
    const TimeBreakdown& best = p.stage_breakdowns[p.reported_stage];
    if (a.sum() - a.pp_bubble_s - a.dp_comm_exposed_s > best.sum() - best.pp_bubble_s - best.dp_comm_exposed_s)
      p.reported_stage = i;
  }
  p.breakdown = p.stage_breakdowns[p.reported_stage];

  // recompute FLOPs: the recomputed forward ops, on every GPU
  double recompute_flops_per_gpu_step = 0;
  const int m = static_cast<int>(s.training->micro_batches(s.plan.dp));
  for (std::int64_t l = 0; l < s.model.layers; ++l)
    recompute_flops_per_gpu_step += costs.layers[costs.layer_cost_index[l]].recompute_flops() * m;
  const double world = static_cast<double>(s.plan.world_size());
  p.model_flops = model_flops_per_step(s);
  // per-GPU recompute FLOPs x (tp*cp*dp) ranks sharing each layer, summed over stages
  p.hardware_flops = p.model_flops + recompute_flops_per_gpu_step * s.plan.tp * s.plan.cp * s.plan.dp;

  const double tokens = static_cast<double>(s.training->global_batch) * s.training->seq_len;
  const Dtype math = s.training->precision;
  Throughput& t = p.throughput;
  t.tokens_per_s = tokens / p.step_s;
  t.tokens_per_s_per_gpu = t.tokens_per_s / world;
  t.model_tflops_per_gpu = p.model_flops / p.step_s / world / 1e12;
  t.hardware_tflops_per_gpu = p.hardware_flops / p.step_s / world / 1e12;
  t.mfu = t.model_tflops_per_gpu * 1e12 / s.cluster.gpu.peak(math);
  t.hfu = t.hardware_tflops_per_gpu * 1e12 / s.cluster.gpu.peak(math);
  p.ops = op_table(s, costs, g, p.reported_stage);
  p.utilization = stage_utilization(s, g, costs, tl, p.reported_stage);
  return p;
}

}  // namespace

nlohmann::json time_json(const TrainingPrediction& p) {
  std::vector<PredictedOp> ops;
  std::vector<std::string> extrapolated;
  // kernel launches and HBM bytes per step on the reported GPU, in all and by op group
  // (the name's first part: attn, mlp, moe, embedding, head, optimizer): a fusion what-if
  // is two reports side by side
  nlohmann::json kernels = {{"launches", 0}, {"hbm_bytes", 0.0}, {"by_group", nlohmann::json::object()}};
  for (const OpPrediction& op : p.ops) {
    ops.push_back({op.name, op.time_s, static_cast<double>(op.count), op.extrapolated, op.hbm_bytes, op.launches});
    if (op.extrapolated) extrapolated.push_back(op.name);
    if (op.launches == 0) continue;
    const std::string group = op.name.substr(0, op.name.find('.'));
    nlohmann::json& g = kernels["by_group"][group];
    if (g.is_null()) g = {{"launches", 0}, {"hbm_bytes", 0.0}};
    for (nlohmann::json* k : {&kernels, &g}) {
      (*k)["launches"] = (*k)["launches"].get<std::int64_t>() + std::int64_t{op.count} * op.launches;
      (*k)["hbm_bytes"] = (*k)["hbm_bytes"].get<double>() + op.count * op.hbm_bytes;
    }
  }
  nlohmann::json stages = nlohmann::json::array();
  for (std::size_t i = 0; i < p.stage_breakdowns.size(); ++i)
    stages.push_back({{"stage", i}, {"breakdown", to_json(p.stage_breakdowns[i])}});
  TimeSection t;  // the keys both sides share, then the simulator's detail
  t.step_s = p.step_s;
  t.breakdown = p.breakdown;
  t.reported_stage = p.reported_stage;
  t.simulated_gpus = p.simulated_gpus;
  t.gemm_clock = p.gemm_clock;
  t.extrapolated_ops = std::move(extrapolated);
  nlohmann::json time = {{"stages", stages}, {"utilization", to_json(p.utilization)}, {"ops", to_json(ops)}, {"kernels", kernels}};
  write_time_section(time, t);
  return time;
}


}  // namespace twinsim

namespace twinsim {

nlohmann::json to_json(const Utilization& u) {
  return {{"compute", u.compute}, {"hbm_bandwidth", u.hbm_bandwidth}, {"tp_link", u.tp_link},
          {"dp_link", u.dp_link}, {"pp_link", u.pp_link}};
}

}  // namespace twinsim
