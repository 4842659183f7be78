#include "sim/inference/iteration_cost.hpp"

#include "sim/cost/compute_cost.hpp"
#include "sim/inference/quantization.hpp"
#include "sim/memory/stage_layers.hpp"
#include "sim/training/rank_layout.hpp"

namespace twinsim {

double IterationCost::latency_s() const {
  double t = 0;
  for (double s : stage_s) t += s;
  return t + p2p_s * (stage_s.empty() ? 0 : static_cast<double>(stage_s.size() - 1));
}

ServingCostModel::ServingCostModel(const Scenario& scenario)
    : s_(scenario),
      tp_group_(group_layout(scenario.cluster, scenario.plan, ParallelGroup::tp)),
      pp_pair_(pipeline_pair_layout(scenario.cluster, scenario.plan)) {
  for (int stage = 0; stage < scenario.plan.pp; ++stage) {
    const StageLayers layers = stage_layers(scenario.model, scenario.plan, stage);
    stage_dense_.push_back(layers.dense);
    stage_moe_.push_back(layers.moe);
  }
}

ServingCostModel::OpsCost ServingCostModel::price(const std::vector<LayerOp>& ops) const {
  const GpuSpec& gpu = s_.cluster.gpu;
  const Dtype gemm_dtype = gemm_math_dtype(gpu, s_.inference->weight_dtype);
  const Dtype act_dtype = serving_activation_dtype(s_.inference->weight_dtype);
  OpsCost cost;
  for (const LayerOp& op : ops) {
    if (op.kind == OpKind::collective) {
      const CollectiveOp c = op.fwd_comm.kind == CollectiveKind::all_gather ? CollectiveOp::all_gather
                                                                            : CollectiveOp::all_reduce;
      cost.tp_comm_s += collective_time_s(s_.cluster, c, tp_group_, static_cast<double>(op.fwd_comm.bytes));
      continue;
    }
    ComputeOp c;
    c.dtype = act_dtype;
    c.flops = op.fwd_flops;
    c.bytes = static_cast<double>(op.fwd_bytes);
    c.kernel = op.kernel;
    switch (op.kind) {
      case OpKind::gemm:
        c.kind = ComputeKind::gemm;
        // the logits layer and the router keep 16-bit weights (iteration_ops.hpp)
        if (op.name != "head.logits" && op.name != "moe.router") c.dtype = gemm_dtype;
        c.m = op.m * op.count, c.n = op.n, c.k = op.k;  // a grouped GEMM fills the GPU like one tall GEMM
        cost.weight_bytes += static_cast<double>(op.weight_bytes);
        break;
      case OpKind::attention:
        c.kind = ComputeKind::attention;
        cost.kv_bytes += c.bytes;
        break;
      case OpKind::norm: c.kind = ComputeKind::norm; break;
      default: c.kind = ComputeKind::elementwise; break;
    }
    cost.compute_s += op_time_s(gpu, c);
  }
  cost.time_s = cost.compute_s + cost.tp_comm_s;  // serving runs TP collectives in line (no overlap)
  return cost;
}

IterationCost ServingCostModel::cost(const IterationShape& shape) const {
  const InferenceWorkload& w = *s_.inference;
  const ModelSpec& m = s_.model;
  IterationCost cost;
  cost.stage_s.assign(stage_dense_.size(), 0.0);
  if (shape.tokens == 0) return cost;
  // all layers of one kind cost the same: price one of each kind and count
  const OpsCost dense = price(build_iteration_layer_ops(m, some_dense_layer(m), s_.plan, w, shape));
  const OpsCost moe = m.moe ? price(build_iteration_layer_ops(m, some_moe_layer(m), s_.plan, w, shape)) : OpsCost{};
  const OpsCost embedding = price(build_iteration_embedding_ops(m, s_.plan, w, shape));
  const OpsCost head = price(build_iteration_head_ops(m, s_.plan, w, shape));
  auto add = [&cost](const OpsCost& part, double count) {
    cost.compute_s += part.compute_s * count;
    cost.tp_comm_s += part.tp_comm_s * count;
    cost.weight_bytes += part.weight_bytes * count;
    cost.kv_bytes += part.kv_bytes * count;
    return part.time_s * count;
  };
  const std::size_t last = stage_dense_.size() - 1;
  for (std::size_t st = 0; st <= last; ++st) {
    double t = add(dense, static_cast<double>(stage_dense_[st])) + add(moe, static_cast<double>(stage_moe_[st]));
    if (st == 0) t += add(embedding, 1);
    if (st == last) t += add(head, 1);
    cost.stage_s[st] = t;
  }
  // the new tokens' hidden states go on to the next stage (16-bit residual stream)
  const double p2p_bytes = static_cast<double>(shape.tokens) * m.hidden *
                           static_cast<double>(dtype_bytes(serving_activation_dtype(w.weight_dtype), 1));
  if (last > 0) cost.p2p_s = collective_time_s(s_.cluster, CollectiveOp::send_recv, pp_pair_, p2p_bytes);
  return cost;
}

}  // namespace twinsim
