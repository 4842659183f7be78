#include "sim/inference/iteration_cost.hpp"

#include <algorithm>
#include <stdexcept>
#include <string_view>

#include "hardware/prefill_attention.hpp"
#include "models/op_names.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/cost/moe_dispatch.hpp"
#include "sim/cost/offload_io.hpp"
#include "sim/cost/power_limit.hpp"
#include "sim/cost/quantize_cost.hpp"
#include "sim/cost/straggler_wait.hpp"
#include "sim/inference/quantization.hpp"
#include "sim/memory/inference.hpp"
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
      ep_group_(group_layout(scenario.cluster, scenario.plan, ParallelGroup::ep)),
      pp_pair_(pipeline_pair_layout(scenario.cluster, scenario.plan)) {
  for (int stage = 0; stage < scenario.plan.pp; ++stage) {
    const StageLayers layers = stage_layers(scenario.model, scenario.plan, stage);
    stage_dense_.push_back(layers.dense);
    stage_moe_.push_back(layers.moe);
  }
  if (scenario.plan.offload_params) {  // ZeRO-Inference streams each module's weights in ahead of it
    const OffloadedModuleBytes bytes = offloaded_module_bytes(
        scenario.model, scenario.plan, scenario.inference->weight_dtype, scenario.inference->experts_dtype());
    const double rate = offloaded_weight_read_Bps(scenario.cluster, scenario.plan);  // sim/cost/offload_io
    fetch_ = {static_cast<double>(bytes.dense_layer) / rate, static_cast<double>(bytes.moe_layer) / rate,
              static_cast<double>(bytes.embedding) / rate};
  }
}

ServingCostModel::PassOps ServingCostModel::build_pass(const IterationShape& shape) const {
  const ModelSpec& m = s_.model;
  const InferenceWorkload& w = *s_.inference;
  PassOps ops;
  const int shared = s_.stack.serving_decode_shared_kv_group;
  const int cuda_cores = s_.stack.serving_decode_cuda_core_group;
  const bool fa2 = s_.stack.serving_prefix_attention_fa2;
  ops.dense = build_iteration_layer_ops(m, some_dense_layer(m), s_.plan, w, shape, shared, cuda_cores, fa2);
  if (m.moe) ops.moe = build_iteration_layer_ops(m, some_moe_layer(m), s_.plan, w, shape, shared, cuda_cores, fa2);
  ops.embedding = build_iteration_embedding_ops(m, s_.plan, w, shape);
  ops.head = build_iteration_head_ops(m, s_.plan, w, shape);
  return ops;
}

namespace {

// What one call of each op in `ops` touches that a next pass touches again: the GEMMs'
// weights and their input and output rows, the attention's KV cache.
struct BytesRead {
  double weights = 0, kv = 0, activations = 0;
  double total() const { return weights + kv + activations; }
};

BytesRead bytes_read(const std::vector<LayerOp>& ops) {
  BytesRead b;
  for (const LayerOp& op : ops) {
    if (op.kind == OpKind::gemm) b.weights += static_cast<double>(op.weight_bytes);
    if (op.kind == OpKind::gemm) b.activations += static_cast<double>(op.fwd_bytes - op.weight_bytes);
    if (op.kind == OpKind::attention) b.kv += static_cast<double>(op.fwd_bytes);
  }
  return b;
}

}  // namespace

double ServingCostModel::working_set_bytes(const PassOps& ops) const {
  auto read = [](const std::vector<LayerOp>& list) { return bytes_read(list).total(); };
  const double dense = read(ops.dense), moe = read(ops.moe);
  const std::size_t last = stage_dense_.size() - 1;
  double largest = 0;
  for (std::size_t st = 0; st <= last; ++st) {
    double bytes = dense * static_cast<double>(stage_dense_[st]) + moe * static_cast<double>(stage_moe_[st]);
    if (st == 0) bytes += read(ops.embedding);
    if (st == last) bytes += read(ops.head);
    largest = std::max(largest, bytes);
  }
  return largest;
}

namespace {

// An fp4 GEMM (W4A4) quantises its 16-bit input first, one pass writing the fp4 values and
// their block scales (a served checkpoint's static input scale: no amax read). vLLM's NVFP4
// CUTLASS GEMM on Blackwell with and without that pass (vllm-project/vllm PR #20646,
// bench_nvfp4_gemm.py, N 6144, K 4096): 3,025 against 3,779 TFLOP/s at M 8192, 3,039 against
// 3,904 at 16384, the pass about a fifth of the GEMM's time. An fp8 GEMM's input takes the same
// pass where the engine runs it as a kernel of its own (StackSpec::serving_fp8_input_cast).
double input_cast_s(const GpuSpec& gpu, Dtype activations, const ComputeOp& gemm) {
  ComputeOp cast;
  cast.kind = ComputeKind::elementwise;
  cast.kernel = kernel_names::kQuantize;
  cast.dtype = activations;
  cast.bytes = quantize_bytes(cast.dtype, gemm.dtype, static_cast<double>(gemm.m) * static_cast<double>(gemm.k), 1, false);
  return op_cost(gpu, cast).time_s();
}

// The engine's own TP all-reduce kernel's time for `bytes` over `group`
// (StackSpec::serving_tp_allreduce_time); 0 where it has no points for the group, the group
// spans nodes, or the bytes lie beyond its last point (the engine falls back to NCCL there).
double engine_allreduce_s(const StackSpec& stack, const GroupLayout& group, double bytes) {
  if (group.nodes() != 1) return 0;
  const auto it = stack.serving_tp_allreduce_time.find(group.ranks);
  if (it == stack.serving_tp_allreduce_time.end() || bytes > it->second.back().x) return 0;
  return interpolate_curve(it->second, bytes);  // the time, linear in log bytes between points
}

}  // namespace

ComputeOp ServingCostModel::compute_op(const LayerOp& op, double working_set, double gemm_clock) const {
  const GpuSpec& gpu = s_.cluster.gpu;
  ComputeOp c;
  c.dtype = serving_activation_dtype(s_.inference->weight_dtype);
  c.flops = op.fwd_flops;
  c.bytes = static_cast<double>(op.fwd_bytes);
  c.kernel = op.kernel;
  switch (op.kind) {
    case OpKind::gemm:
      c.kind = ComputeKind::gemm;
      // the logits layer and the router keep 16-bit weights (iteration_ops.hpp); the routed
      // experts' are in their own format (InferenceWorkload::experts_dtype)
      if (op.name != op_names::kHeadLogits && op.name != op_names::kMoeRouter)
        c.dtype = gemm_math_dtype(
            gpu, routed_expert_gemm(op.name) ? s_.inference->experts_dtype() : s_.inference->weight_dtype);
      // the engine's MoE kernel may be an older generation than the GPU's (StackSpec)
      if (routed_expert_gemm(op.name)) {
        c.library_scale = gpu.generation_scale(s_.stack.moe_gemm_generation);
        c.generation = s_.stack.moe_gemm_generation;
        c.block_scaled = s_.inference->fp8_block_scales;  // read only by an fp8 call (compute_cost.cpp)
      }
      c.gemm_kernel = s_.stack.gemm_kernel;  // the engine's own kernels' curve where the GPU has one
      c.m = op.m, c.n = op.n, c.k = op.k;
      c.groups = op.count;  // a MoE layer's touched experts, in one fused kernel (compute_cost.hpp)
      c.fused_groups = true;
      c.kernel = kGemmKernel;
      c.working_set_bytes = working_set;
      c.clock_scale = gemm_clock;
      break;
    case OpKind::attention:
      c.kind = ComputeKind::attention;
      // MLA's absorbed decode at its own measured rate where the device has one
      c.kernel = op.kernel == kMlaDecodeAttentionKernel && gpu.kernel_efficiency.contains(kMlaDecodeAttentionKernel)
                     ? kMlaDecodeAttentionKernel
                     : kKvCacheAttentionKernel;
      c.head_dim = op.head_dim;
      c.kv_items = op.kv_items;
      c.cuda_cores = op.cuda_cores;
      c.prefix_flops = op.prefix_flops;
      c.square_flops = op.square_flops;
      c.square_len = op.square_len;
      c.heads = op.heads;
      c.attention_kernel = prefill_attention_that_runs(s_.stack, gpu);
      if (s_.stack.serving_decode_fa3_m128) c.kv_read_efficiency = gpu.kv_attention_fa3_m128_efficiency;
      break;
    case OpKind::norm: c.kind = ComputeKind::norm; break;
    default: c.kind = ComputeKind::elementwise; break;
  }
  return c;
}

double ServingCostModel::call_time_s(const LayerOp& op, double working_set, double gemm_clock, double& tensor_s) const {
  tensor_s = 0;
  if (op.kind == OpKind::collective) {
    if (op.name == op_names::kMoeCounts)  // the rows per expert: every rank's, whatever the routing
      return collective_time_s(s_.cluster, CollectiveOp::all_to_all, ep_group_, static_cast<double>(op.fwd_comm.bytes));
    if (op.fwd_comm.group == CommGroup::ep)  // group-limited routing's network share (moe_dispatch.hpp)
      return collective_time_s(s_.cluster, CollectiveOp::all_to_all, ep_group_,
                               moe_dispatch_bytes(static_cast<double>(op.fwd_comm.bytes), *s_.model.moe, ep_group_));
    const CollectiveOp c = op.fwd_comm.kind == CollectiveKind::all_gather ? CollectiveOp::all_gather
                                                                          : CollectiveOp::all_reduce;
    const auto bytes = static_cast<double>(op.fwd_comm.bytes);
    if (c == CollectiveOp::all_reduce)
      if (const double t = engine_allreduce_s(s_.stack, tp_group_, bytes); t > 0) return t;
    return collective_time_s(s_.cluster, c, tp_group_, bytes);
  }
  const ComputeOp c = compute_op(op, working_set, gemm_clock);
  const ComputeCost cost = op_cost(s_.cluster.gpu, c);
  if (op.kind == OpKind::gemm || op.kind == OpKind::attention) tensor_s = cost.math_s;
  const bool cast = is_fp4(c.dtype) || (c.dtype == Dtype::fp8 && s_.stack.serving_fp8_input_cast);
  if (op.kind != OpKind::gemm || !cast) return cost.time_s();
  return cost.time_s() + input_cast_s(s_.cluster.gpu, serving_activation_dtype(s_.inference->weight_dtype), c);
}

// Priced at the curves' clock; where the list's mix (its GEMMs' and attention's math, its
// other kernels, its collectives and their waits as idle time) reaches the GPU's power limit,
// its GEMMs again at the clock that leaves: a serving engine runs the same pass back to back
// (a benchmark's prefills, a batch's decodes), as a training step runs its layers.
std::vector<double> ServingCostModel::list_times_s(const std::vector<LayerOp>& ops, double working_set) const {
  std::vector<double> raw;
  std::vector<WaitRole> roles;
  double tensor_s = 0;
  for (const LayerOp& op : ops) {
    double op_tensor_s = 0;
    raw.push_back(call_time_s(op, working_set, 1.0, op_tensor_s));
    tensor_s += op_tensor_s;
    roles.push_back(op.kind == OpKind::collective ? WaitRole::collective : WaitRole::compute);
  }
  if (!s_.cluster.gpu.power_limited_gemm) {
    add_straggler_waits(raw, roles, s_.cluster.straggler);  // the list runs layer after layer
    return raw;
  }
  std::vector<double> t = raw;
  add_straggler_waits(t, roles, s_.cluster.straggler);
  WorkMix mix;
  mix.tensor_s = tensor_s;
  for (std::size_t i = 0; i < ops.size(); ++i) (roles[i] == WaitRole::collective ? mix.idle_s : mix.memory_s) += t[i];
  mix.memory_s -= mix.tensor_s;
  const double clock = sustained_gemm_clock(s_.cluster.gpu, mix);
  if (clock >= 1) return t;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind == OpKind::gemm) raw[i] = call_time_s(ops[i], working_set, clock, tensor_s);
  add_straggler_waits(raw, roles, s_.cluster.straggler);
  return raw;
}

ServingCostModel::OpsCost ServingCostModel::price(const std::vector<LayerOp>& ops, double working_set) const {
  OpsCost cost;
  const BytesRead read = bytes_read(ops);
  cost.weight_bytes = read.weights;
  cost.kv_bytes = read.kv;
  const std::vector<double> times = list_times_s(ops, working_set);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != OpKind::collective) cost.compute_s += times[i];
    else if (ops[i].fwd_comm.group == CommGroup::ep) cost.ep_comm_s += times[i];
    else cost.tp_comm_s += times[i];
  }
  // serving runs its collectives in line (no overlap)
  cost.time_s = cost.compute_s + cost.tp_comm_s + cost.ep_comm_s;
  return cost;
}

IterationCost ServingCostModel::cost(const IterationShape& shape) const {
  const InferenceWorkload& w = *s_.inference;
  const ModelSpec& m = s_.model;
  IterationCost cost;
  cost.stage_s.assign(stage_dense_.size(), 0.0);
  if (shape.tokens == 0) return cost;
  // all layers of one kind cost the same: price one of each kind and count
  const PassOps ops = build_pass(shape);
  const double working_set = working_set_bytes(ops);
  const OpsCost dense = price(ops.dense, working_set);
  const OpsCost moe = m.moe ? price(ops.moe, working_set) : OpsCost{};
  const OpsCost embedding = price(ops.embedding, working_set);
  const OpsCost head = price(ops.head, working_set);
  // a module runs while the next one's weights arrive: it takes the longer of the two
  auto add = [&cost](const OpsCost& part, double count, double fetch_s) {
    cost.compute_s += part.compute_s * count;
    cost.tp_comm_s += part.tp_comm_s * count;
    cost.ep_comm_s += part.ep_comm_s * count;
    cost.weight_bytes += part.weight_bytes * count;
    cost.kv_bytes += part.kv_bytes * count;
    cost.weight_fetch_exposed_s += std::max(0.0, fetch_s - part.time_s) * count;
    return std::max(part.time_s, fetch_s) * count;
  };
  const std::size_t last = stage_dense_.size() - 1;
  for (std::size_t st = 0; st <= last; ++st) {
    double t = add(dense, static_cast<double>(stage_dense_[st]), fetch_.dense_layer_s) +
               add(moe, static_cast<double>(stage_moe_[st]), fetch_.moe_layer_s);
    if (st == 0) t += add(embedding, 1, fetch_.embedding_s);
    if (st == last) t += add(head, 1, fetch_.embedding_s);
    cost.stage_s[st] = t;
  }
  // the new tokens' hidden states go on to the next stage (16-bit residual stream)
  const double p2p_bytes = static_cast<double>(shape.tokens) * m.hidden *
                           static_cast<double>(dtype_bytes(serving_activation_dtype(w.weight_dtype), 1));
  if (last > 0) cost.p2p_s = collective_time_s(s_.cluster, CollectiveOp::send_recv, pp_pair_, p2p_bytes);
  add_engine_host_time(cost, shape, ops);
  return cost;
}

// The stack's host time for a pass of `sequences` on this node's CPU (HostSpec::cpu_time_scale:
// the stacks' figures are an x86 server's).
double ServingCostModel::engine_host_s(const IterationShape& shape, const PassOps& ops) const {
  return (s_.stack.serving_host_s(shape.sequences) + eager_launch_s(shape, ops)) * s_.cluster.host.cpu_time_scale;
}

// A pass carries a prompt chunk when it computes more new tokens than it has sequences (a
// decode step computes one a sequence); its host then issues the first stage's ops one by one.
double ServingCostModel::eager_launch_s(const IterationShape& shape, const PassOps& ops) const {
  if (!s_.stack.serving_eager_prefill || shape.tokens <= shape.sequences) return 0;
  // ops issued: each layer's list times the stage's layers, plus the embedding and the head
  const double issued = static_cast<double>(ops.dense.size() * stage_dense_[0] + ops.moe.size() * stage_moe_[0] +
                                            ops.embedding.size() + ops.head.size());
  return issued * s_.stack.host_torch_op_s;
}

// The engine's host time for the pass, before its first kernel: all of it when the engine
// schedules the next pass after the last one's tokens are back (vLLM V0, TensorRT-LLM's
// session loop), only its excess over the device's pass when it prepares a pass while the
// GPU runs the one before (vLLM V1's async scheduling).
void ServingCostModel::add_engine_host_time(IterationCost& cost, const IterationShape& shape,
                                            const PassOps& ops) const {
  if (!s_.stack.has_serving_host_time()) return;
  const double host = engine_host_s(shape, ops);
  cost.host_s = s_.stack.serving_async ? std::max(0.0, host - cost.latency_s()) : host;
  cost.stage_s[0] += cost.host_s;
}

namespace {

// The ops of a MoE layer that join the expert-parallel ranks: the count exchange, the
// dispatch, the routed experts' GEMMs and activation, the combine (models/op_names.hpp).
bool joins_the_ranks(const LayerOp& op) {
  const std::string_view name = op.name;
  return name == op_names::kMoeCounts || name == op_names::kMoeDispatch || name == op_names::kMoeCombine ||
         name.starts_with(op_names::kMoeExperts);
}

std::vector<LayerOp> ops_where(const std::vector<LayerOp>& ops, bool experts) {
  std::vector<LayerOp> out;
  for (const LayerOp& op : ops)
    if (joins_the_ranks(op) == experts) out.push_back(op);
  return out;
}

}  // namespace

double ServingCostModel::lockstep_part_s(const PassOps& ops, bool experts) const {
  const double working_set = working_set_bytes(ops);
  const double moe_layers = static_cast<double>(stage_moe_[0]);
  const double moe = s_.model.moe ? price(ops_where(ops.moe, experts), working_set).time_s * moe_layers : 0.0;
  if (experts) return moe;
  return moe + price(ops.dense, working_set).time_s * static_cast<double>(stage_dense_[0]) +
         price(ops.embedding, working_set).time_s + price(ops.head, working_set).time_s;
}

double ServingCostModel::ep_lockstep_pass_s(const std::vector<IterationShape>& rank_shapes) const {
  if (stage_dense_.size() != 1) throw std::logic_error("ep_lockstep_pass_s: one pipeline stage only");
  double own_s = 0, host_s = 0;
  std::int64_t tokens = 0, sequences = 0;
  for (const IterationShape& shape : rank_shapes) {
    if (shape.tokens == 0) continue;
    tokens += shape.tokens;
    sequences += shape.sequences;
    const PassOps ops = build_pass(shape);  // the rank's own lists, for its device and host time
    own_s = std::max(own_s, lockstep_part_s(ops, false));
    if (s_.stack.has_serving_host_time()) host_s = std::max(host_s, engine_host_s(shape, ops));
  }
  if (tokens == 0) return 0;
  // each GPU's experts take 1/ep of all the ranks' routed tokens: as many as the mean rank's own
  const auto ranks = static_cast<std::int64_t>(rank_shapes.size());
  IterationShape mean;
  mean.tokens = (tokens + ranks - 1) / ranks;
  mean.sequences = std::max<std::int64_t>(1, sequences / ranks);
  const double device_s = own_s + lockstep_part_s(build_pass(mean), true);
  // the host's time as add_engine_host_time charges it, the slowest rank's
  return s_.stack.serving_async ? std::max(device_s, host_s) : device_s + host_s;
}

}  // namespace twinsim

namespace twinsim {

std::vector<PassOpTime> ServingCostModel::op_times(const IterationShape& shape) const {
  std::vector<PassOpTime> out;
  if (shape.tokens == 0) return out;
  const ModelSpec& m = s_.model;
  const PassOps pass = build_pass(shape);
  const double working_set = working_set_bytes(pass);
  auto add = [this, &out, working_set](const std::vector<LayerOp>& ops, double count) {
    if (count <= 0) return;
    const std::vector<double> times = list_times_s(ops, working_set);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const LayerOp& op = ops[i];
      const std::string name = op_names::op_name(-1, op.name, op_names::OpPass::fwd);  // as the executor times it
      const double t = times[i];
      auto it = std::find_if(out.begin(), out.end(), [&name](const PassOpTime& o) { return o.name == name; });
      if (it == out.end()) {
        out.push_back({name, t, count});
        continue;
      }
      // the same op in dense and MoE layers: a call-weighted mean
      it->time_s = (it->time_s * it->count + t * count) / (it->count + count);
      it->count += count;
    }
  };
  double dense = 0, moe = 0;
  for (std::size_t st = 0; st < stage_dense_.size(); ++st) {
    dense += static_cast<double>(stage_dense_[st]);
    moe += static_cast<double>(stage_moe_[st]);
  }
  add(pass.embedding, 1);
  add(pass.dense, dense);
  if (m.moe) add(pass.moe, moe);
  add(pass.head, 1);
  return out;
}

}  // namespace twinsim
