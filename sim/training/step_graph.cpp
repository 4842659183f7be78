#include "sim/training/step_graph.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "models/param_count.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/training/pipeline_schedule.hpp"
#include "sim/training/rank_layout.hpp"

namespace twinsim {

using engine::ResourceId;
using engine::TaskId;

namespace {

// Megatron-core DDP bucket: max(40M, 1M x dp) parameters (distributed_data_parallel_config.py)
std::int64_t bucket_params(int dp) { return std::max<std::int64_t>(40'000'000, 1'000'000LL * dp); }

// Bytes a gradient element travels in: fp32 training reduces fp32, mixed precision the
// 16-bit gradients (the ZeRO paper's accounting, Rajbhandari et al. 2020 §3).
int grad_bytes(const TrainingWorkload& t) { return t.precision == Dtype::fp32 ? 4 : 2; }

std::int64_t layer_params_per_gpu(const Scenario& s, std::int64_t layer) {
  const LayerParams p = layer_params(s.model, layer);
  // routed experts are split over EP, every matrix over TP; the router is replicated
  return (p.attention + p.norms + p.dense_ffn + p.shared_experts) / s.plan.tp + p.router +
         p.routed_experts / (static_cast<std::int64_t>(s.plan.tp) * s.plan.ep);
}

struct Builder {
  const Scenario& s;
  const StepCosts& costs;
  StepGraph out;
  int pp, v, m;
  std::vector<std::vector<std::vector<std::int64_t>>> chunk_layers;  // [stage][chunk] -> layers
  // first and last task of each slot: index ((stage * m + mb) * v + chunk) * 2 + backward
  std::vector<TaskId> slot_first, slot_last;
  // the task that finishes each layer's backward in the last slot of its chunk
  std::map<std::pair<int, std::int64_t>, TaskId> last_backward;  // (stage, layer)
  std::map<std::pair<int, std::int64_t>, TaskId> first_forward;  // (stage, layer)

  Builder(const Scenario& sc, const StepCosts& c)
      : s(sc), costs(c), pp(sc.plan.pp), v(sc.plan.virtual_stages),
        m(static_cast<int>(sc.training->micro_batches(sc.plan.dp))) {}

  int slot_index(int stage, int mb, int chunk, bool backward) const {
    return ((stage * m + mb) * v + chunk) * 2 + (backward ? 1 : 0);
  }

  // Layers of virtual stage (chunk c, stage i) in Megatron's order c * pp + i.
  void assign_layers() {
    chunk_layers.assign(pp, std::vector<std::vector<std::int64_t>>(v));
    std::int64_t next = 0;
    for (int c = 0; c < v; ++c)
      for (int i = 0; i < pp; ++i)
        for (int k = 0; k < s.plan.stage_layers[i] / v; ++k) chunk_layers[i][c].push_back(next++);
  }

  void add_streams() {
    auto& g = out.graph;
    out.categories = {g.category("compute"), g.category("recompute"), g.category("tp_comm"),
                      g.category("cp_comm"), g.category("ep_comm"),   g.category("pp_comm"),
                      g.category("dp_comm"), g.category("optimizer")};
    for (int i = 0; i < pp; ++i) {
      StageStreams st;
      st.compute = g.add_stream(i, "compute");
      st.tp = g.add_stream(i, "tp_comm");
      st.cp = g.add_stream(i, "cp_comm");
      st.dp = g.add_stream(i, "dp_comm");
      out.stages.push_back(st);
    }
  }

  TaskId task(const std::string& name, double seconds, engine::CategoryId cat, ResourceId r,
              TaskOrigin origin = {}) {
    const TaskId t = out.graph.add_task(name, seconds, cat, {r});
    out.origin.push_back(origin);
    return t;
  }

  // A compute-stream task, and the communication that follows it: on the compute stream
  // when it blocks (Megatron's default), on its own stream when overlapped, where the next
  // compute task waits for it.
  struct Chain {
    TaskId last = -1;
    TaskId before_last = -1;      // the compute task before `last`
    std::vector<TaskId> pending;  // side-stream tasks the next compute task waits for
  };

  TaskId compute(Chain& chain, const StageStreams& st, const std::string& name, double seconds,
                 engine::CategoryId cat, TaskOrigin origin = {}) {
    const TaskId t = task(name, seconds, cat, st.compute, origin);
    for (TaskId p : chain.pending) out.graph.add_dependency(p, t);
    chain.pending.clear();
    chain.before_last = chain.last;
    chain.last = t;
    return t;
  }

  void comm(Chain& chain, const StageStreams& st, const std::string& name, double seconds,
            engine::CategoryId cat, ResourceId side_stream) {
    if (seconds <= 0) return;
    if (side_stream < 0) {
      compute(chain, st, name, seconds, cat);
      return;
    }
    // overlapped communication runs beside the compute task it belongs to (TP overlap
    // pipelines a GEMM's chunks with their collectives; ring attention passes K,V chunks
    // while attending): it waits for what preceded that compute task, not for the task
    const TaskId t = task(name, seconds, cat, side_stream);
    const TaskId after = chain.before_last >= 0 ? chain.before_last : chain.last;
    if (after >= 0) out.graph.add_dependency(after, t);
    chain.pending.push_back(t);
  }

  const LayerCost& cost_of(std::int64_t layer) const { return costs.layers[costs.layer_cost_index[layer]]; }

  void forward_layer(Chain& ch, int stage, std::int64_t layer, bool first_mb) {
    const StageStreams& st = out.stages[stage];
    const StepCategories& c = out.categories;
    const LayerCost& lc = cost_of(layer);
    const std::string prefix = "layer" + std::to_string(layer);
    const ResourceId tp_side = s.plan.tp_comm_overlap ? st.tp : -1;
    const TaskId t = compute(ch, st, prefix + ".fwd", lc.fwd_s(TimeCategory::compute), c.compute,
                             {static_cast<std::int32_t>(layer), costs.layer_cost_index[layer], LayerPass::fwd});
    if (first_mb) first_forward[{stage, layer}] = t;
    comm(ch, st, prefix + ".cp.fwd", lc.fwd_s(TimeCategory::cp_comm), c.cp_comm, st.cp);
    comm(ch, st, prefix + ".tp.fwd", lc.fwd_s(TimeCategory::tp_comm), c.tp_comm, tp_side);
    comm(ch, st, prefix + ".ep.fwd", lc.fwd_s(TimeCategory::ep_comm), c.ep_comm, -1);
  }

  void backward_layer(Chain& ch, int stage, std::int64_t layer, bool last_mb) {
    const StageStreams& st = out.stages[stage];
    const StepCategories& c = out.categories;
    const LayerCost& lc = cost_of(layer);
    const std::string prefix = "layer" + std::to_string(layer);
    const ResourceId tp_side = s.plan.tp_comm_overlap ? st.tp : -1;
    const std::int32_t idx = costs.layer_cost_index[layer];
    if (s.plan.recompute != Recompute::none) {
      compute(ch, st, prefix + ".recompute", lc.recompute_s(), c.recompute,
              {static_cast<std::int32_t>(layer), idx, LayerPass::recompute});
      // full recompute runs the layer's forward collectives again
      if (s.plan.recompute == Recompute::full) {
        comm(ch, st, prefix + ".cp.recompute", lc.fwd_s(TimeCategory::cp_comm), c.cp_comm, st.cp);
        comm(ch, st, prefix + ".tp.recompute", lc.fwd_s(TimeCategory::tp_comm), c.tp_comm, tp_side);
        comm(ch, st, prefix + ".ep.recompute", lc.fwd_s(TimeCategory::ep_comm), c.ep_comm, -1);
      }
    }
    comm(ch, st, prefix + ".ep.bwd", lc.bwd_s(TimeCategory::ep_comm), c.ep_comm, -1);
    const TaskId t = compute(ch, st, prefix + ".bwd", lc.bwd_s(TimeCategory::compute), c.compute,
                             {static_cast<std::int32_t>(layer), idx, LayerPass::bwd});
    comm(ch, st, prefix + ".tp.bwd", lc.bwd_s(TimeCategory::tp_comm), c.tp_comm, tp_side);
    comm(ch, st, prefix + ".cp.bwd", lc.bwd_s(TimeCategory::cp_comm), c.cp_comm, st.cp);
    if (last_mb) last_backward[{stage, layer}] = t;
  }

  void ends(Chain& ch, int stage, const LayerCost& lc, const std::string& name, bool backward) {
    const StageStreams& st = out.stages[stage];
    const StepCategories& c = out.categories;
    const double work = backward ? lc.bwd_s(TimeCategory::compute) : lc.fwd_s(TimeCategory::compute);
    const double tp = backward ? lc.bwd_s(TimeCategory::tp_comm) : lc.fwd_s(TimeCategory::tp_comm);
    compute(ch, st, name + (backward ? ".bwd" : ".fwd"), work, c.compute);
    comm(ch, st, name + (backward ? ".tp.bwd" : ".tp.fwd"), tp, c.tp_comm, -1);
  }

  void emit_slot(int stage, const PipelineSlot& slot) {
    const bool first_virtual = stage == 0 && slot.chunk == 0;
    const bool last_virtual = stage == pp - 1 && slot.chunk == v - 1;
    const auto& layers = chunk_layers[stage][slot.chunk];
    Chain ch;
    const TaskId before = out.graph.num_tasks();
    if (slot.forward) {
      if (first_virtual) ends(ch, stage, costs.embedding, "embedding", false);
      for (std::int64_t l : layers) forward_layer(ch, stage, l, slot.micro_batch == 0);
      if (last_virtual) ends(ch, stage, costs.head, "head", false);
    } else {
      if (last_virtual) ends(ch, stage, costs.head, "head", true);
      for (auto it = layers.rbegin(); it != layers.rend(); ++it)
        backward_layer(ch, stage, *it, slot.micro_batch == m - 1);
      if (first_virtual) ends(ch, stage, costs.embedding, "embedding", true);
    }
    // a zero-length marker keeps every slot non-empty and closes pending side streams
    compute(ch, out.stages[stage], slot.forward ? "slot.fwd.end" : "slot.bwd.end", 0, out.categories.compute);
    const int idx = slot_index(stage, slot.micro_batch, slot.chunk, !slot.forward);
    slot_first[idx] = before;
    slot_last[idx] = ch.last;
  }

  // Activations (forward) and their gradients (backward) between neighbouring stages;
  // Megatron sends 1/t of the tensor from each TP rank (Narayanan et al. 2021 §4.1).
  void add_pipeline_transfers() {
    if (pp == 1) return;
    const std::int64_t bytes = s.training->micro_batch * s.training->seq_len / s.plan.cp * s.model.hidden *
                               dtype_bytes(s.training->precision, 1) / s.plan.tp;
    const double seconds = collective_time_s(s.cluster, CollectiveOp::send_recv,
                                             pipeline_pair_layout(s.cluster, s.plan), static_cast<double>(bytes));
    std::vector<ResourceId> down(pp), up(pp);
    for (int i = 0; i < pp; ++i) {
      down[i] = out.graph.add_link("pp" + std::to_string(i) + "->" + std::to_string((i + 1) % pp));
      up[i] = out.graph.add_link("pp" + std::to_string((i + 1) % pp) + "->" + std::to_string(i));
    }
    for (int mb = 0; mb < m; ++mb)
      for (int c = 0; c < v; ++c)
        for (int i = 0; i < pp; ++i) {
          if (i == pp - 1 && c == v - 1) continue;  // the last virtual stage sends nothing onward
          const int next_stage = (i + 1) % pp, next_chunk = i == pp - 1 ? c + 1 : c;
          transfer(down[i], "pp.send.fwd", seconds, slot_last[slot_index(i, mb, c, false)],
                   slot_first[slot_index(next_stage, mb, next_chunk, false)]);
          transfer(up[i], "pp.send.bwd", seconds, slot_last[slot_index(next_stage, mb, next_chunk, true)],
                   slot_first[slot_index(i, mb, c, true)]);
        }
  }

  void transfer(ResourceId link, const std::string& name, double seconds, TaskId from, TaskId to) {
    const TaskId t = task(name, seconds, out.categories.pp_comm, link);
    out.graph.add_dependency(from, t);
    out.graph.add_dependency(t, to);
  }

  void build() {
    assign_layers();
    add_streams();
    slot_first.assign(static_cast<std::size_t>(pp) * m * v * 2, -1);
    slot_last = slot_first;
    for (int i = 0; i < pp; ++i)
      for (const PipelineSlot& slot : stage_schedule(s.plan.schedule, pp, i, m, v)) emit_slot(i, slot);
    add_pipeline_transfers();
    for (int i = 0; i < pp; ++i) add_data_parallel(i);
  }

  void add_data_parallel(int stage);
};

// Gradient reduction in buckets (overlapped with the remaining backward when
// overlap_grad_reduce), the optimizer step, and the ZeRO parameter all-gather.
void Builder::add_data_parallel(int stage) {
  const StageStreams& st = out.stages[stage];
  const StepCategories& c = out.categories;
  const GroupLayout dp = group_layout(s.cluster, s.plan, ParallelGroup::dp);
  const bool sharded = s.plan.zero >= 1;
  const TaskId last_compute = out.graph.tasks_on(st.compute).back();
  std::vector<TaskId> reduces;
  std::vector<std::pair<std::int64_t, std::int64_t>> buckets;  // (first layer of bucket, params)
  // buckets fill in backward order: the stage's layers, last first
  std::vector<std::int64_t> layers;
  for (int ch = v - 1; ch >= 0; --ch)
    for (auto it = chunk_layers[stage][ch].rbegin(); it != chunk_layers[stage][ch].rend(); ++it) layers.push_back(*it);
  std::int64_t params = 0;
  for (std::size_t k = 0; k < layers.size(); ++k) {
    params += layer_params_per_gpu(s, layers[k]);
    if (params >= bucket_params(s.plan.dp) || k + 1 == layers.size()) {
      buckets.push_back({layers[k], params});
      params = 0;
    }
  }
  std::int64_t total_params = stage_params_per_gpu(s, stage);
  if (s.plan.dp > 1) {
    const CollectiveOp op = sharded ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce;
    for (const auto& [layer, n] : buckets) {
      const double seconds = collective_time_s(s.cluster, op, dp, static_cast<double>(n) * grad_bytes(*s.training));
      const TaskId t = task("dp.grad_reduce.layer" + std::to_string(layer), seconds, c.dp_comm, st.dp);
      out.graph.add_dependency(s.plan.overlap_grad_reduce ? last_backward.at({stage, layer}) : last_compute, t);
      reduces.push_back(t);
    }
  }
  // Adam touches master weights, two moments and the gradient, and writes the working
  // copy: about 28 bytes per parameter in mixed precision (4+4+4 read and written, +2+2)
  const std::int64_t shard = sharded ? total_params / s.plan.dp : total_params;
  const double bytes_per_param = s.training->optimizer == Optimizer::adam ? 28 : 16;
  ComputeOp step;
  step.kind = ComputeKind::optimizer;
  step.bytes = bytes_per_param * static_cast<double>(shard);
  const TaskId opt = task("optimizer.step", op_time_s(s.cluster.gpu, step), c.optimizer, st.compute);
  for (TaskId r : reduces) out.graph.add_dependency(r, opt);
  if (!sharded || s.plan.dp == 1) return;
  // the updated shards are gathered back; overlapped, the gather happens during the next
  // step's forward, so this step waits only for its first bucket (Megatron overlap_param_gather)
  const int pbytes = dtype_bytes(s.training->precision, 1);
  for (const auto& [layer, n] : buckets) {
    const double seconds = collective_time_s(s.cluster, CollectiveOp::all_gather, dp, static_cast<double>(n) * pbytes);
    const TaskId t = task("dp.param_gather.layer" + std::to_string(layer), seconds, c.dp_comm, st.dp);
    out.graph.add_dependency(opt, t);
    if (s.plan.overlap_param_gather) break;
  }
}

}  // namespace

std::int64_t stage_params_per_gpu(const Scenario& s, int stage) {
  std::int64_t first = 0;
  for (int i = 0; i < stage; ++i) first += s.plan.stage_layers[i];
  std::int64_t n = 0;
  for (std::int64_t l = first; l < first + s.plan.stage_layers[stage]; ++l) n += layer_params_per_gpu(s, l);
  const ParamCount pc = count_params(s.model);
  if (stage == 0) n += pc.embedding / s.plan.tp;
  if (stage == s.plan.pp - 1) {
    n += pc.final_norm + (s.model.tied_embeddings ? (s.plan.pp > 1 ? pc.embedding / s.plan.tp : 0)
                                                  : pc.output_layer / s.plan.tp);
  }
  return n;
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

StepGraph build_step_graph(const Scenario& s, const StepCosts& costs) {
  Builder b(s, costs);
  b.build();
  return std::move(b.out);
}

}  // namespace twinsim
