#include "sim/training/zero_comm.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "models/layer_ops.hpp"
#include "models/quantized_grads.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/cost/offload_io.hpp"
#include "sim/memory/stage_layers.hpp"
#include "sim/memory/weights.hpp"
#include "sim/training/rank_layout.hpp"
#include "sim/training/transfer_bytes.hpp"

namespace twinsim {

namespace {

// The device's copies around a ZeRO collective (StackSpec::zero_gather_passes,
// zero_reduce_passes): `passes` element-sized HBM accesses per element of `bytes`, at the
// memory-bound rate of a copy (kernel `cast`: one read and one write an element).
double copy_passes_s(const ClusterSpec& cluster, double passes, double bytes) {
  if (passes <= 0 || bytes <= 0) return 0;
  ComputeOp pass;
  pass.kind = ComputeKind::elementwise;
  pass.kernel = kernel_names::kCast;
  pass.dtype = Dtype::bf16;
  pass.bytes = passes * bytes;
  return op_time_s(cluster.gpu, pass);
}

// Host time per rank of one list collective of `op`: the list built in Python, one view a rank
// (StackSpec::zero_gather_list_s, zero_reduce_list_s), and PyTorch's copy of each rank's chunk
// (StackSpec::zero_list_copy_s).
double list_host_per_rank_s(const StackSpec& stack, CollectiveOp op) {
  return stack.zero_list_copy_s +
         (op == CollectiveOp::all_gather ? stack.zero_gather_list_s : stack.zero_reduce_list_s);
}

// `calls` equal calls of `params x element_bytes` in all, back to back on the DP stream, each
// with the stack's host work of a list collective, per rank (list_host_per_rank_s), and the
// device's copies around them.
double dp_calls_s(const ClusterSpec& cluster, const StackSpec& stack, const GroupLayout& group, CollectiveOp op,
                  double params, double element_bytes, std::int64_t calls_n) {
  const auto calls = static_cast<double>(calls_n);
  const double copies = group.ranks * list_host_per_rank_s(stack, op);
  const double passes = op == CollectiveOp::all_gather ? stack.zero_gather_passes : stack.zero_reduce_passes;
  return calls * (collective_time_s(cluster, op, group, params * element_bytes / calls) + copies) +
         copy_passes_s(cluster, passes, params * element_bytes);
}

// The calls that carry a layer's ZeRO-3 gather: the stack's per-tensor count, else its buckets.
std::int64_t gather_calls(const StackSpec& stack, double params) {
  return stack.zero_gather_calls > 0 ? stack.zero_gather_calls : zero_calls(params, stack.zero_gather_bucket_params);
}

// The calls that carry a layer's gradient reduce-scatter: per tensor, else by buckets.
std::int64_t reduce_calls(const StackSpec& stack, double params) {
  return stack.zero_reduce_calls > 0 ? stack.zero_reduce_calls : zero_calls(params, stack.zero_reduce_bucket_params);
}

// ZeRO++ (Wang et al. 2023, "ZeRO++: Extremely Efficient Collective Communication for Giant
// Model Training", §3.1, §3.3; DeepSpeed's ZeRO++ tutorial): block-based quantisation, one
// fp32 scale per block of 2,048 values (DeepSpeed's ZeRO++ quantizer tests group a tensor
// as numel / 2048 blocks). Bytes on the wire per value:
constexpr auto kQuantBlock = static_cast<double>(kGradQuantBlock);
constexpr double kInt8WireBytes = 1.0 + 4.0 / kQuantBlock;  // qwZ weights, int8 gradient compression
constexpr double kInt4WireBytes = 0.5 + 4.0 / kQuantBlock;  // qgZ gradients, int4 gradient compression

// A memory-bound pass of `kernel` over `bytes` (read and written together).
double memory_pass_s(const ClusterSpec& cluster, std::string_view kernel, Dtype precision, double bytes) {
  ComputeOp pass;
  pass.kind = ComputeKind::elementwise;
  pass.kernel = kernel;
  pass.dtype = precision;
  pass.bytes = bytes;
  return op_time_s(cluster.gpu, pass);
}

// A quantise/dequantise pass over `bytes` at the "quantize" kernel's rate.
double quantize_pass_s(const ClusterSpec& cluster, Dtype precision, double bytes) {
  return memory_pass_s(cluster, kernel_names::kQuantize, precision, bytes);
}

// A quantised exchange's dequantise-add over `bytes`: at the "dequantize" kernel's rate where
// the device measured it (a calibrated host: ~7x quantize's, issue 61), else as a quantise pass.
double dequantize_pass_s(const ClusterSpec& cluster, Dtype precision, double bytes) {
  const GpuSpec& gpu = cluster.gpu;
  const bool measured = gpu.kernel_efficiency.contains(kernel_names::kDequantize) ||
                        gpu.kernel_efficiency_16bit.contains(kernel_names::kDequantize);
  return memory_pass_s(cluster, measured ? kernel_names::kDequantize : kernel_names::kQuantize, precision, bytes);
}

bool quantized_weights(const Plan& plan) { return plan.shards_params() && plan.zero_quantized_weights; }
bool quantized_gradients(const Plan& plan) { return plan.shards_params() && plan.zero_quantized_gradients; }

// Bytes per gradient value on the wire under plan.gradient_compression (ZeRO 0-2): the
// executor's exchange sends the same (models/quantized_grads.hpp).
double compressed_grad_bytes(const Plan& plan) { return quantized_grad_bytes_per_value(plan.gradient_compression); }

// Top-k sparsification (Lin et al. 2018, "Deep Gradient Compression", §3; Aji & Heafield
// 2017): each rank sends its largest ratio x n gradient values (after adding its residual)
// with a 4-byte index each. Sparse sums do not reduce in flight, so an all-reduce becomes
// an all-gather of every rank's selection, and a reduce-scatter an all-to-all sending each
// rank the selected values of its shard; a pass selects (reading the gradients, writing the
// residual) and one scatter-adds what arrives into the dense result.
double topk_reduce_s(const ClusterSpec& cluster, const Plan& plan, CollectiveOp op, const GroupLayout& dp,
                     double params, Dtype precision) {
  const double element = grad_element_bytes(precision);
  const double entry = element + 4.0;  // the value and its int32 index
  const double kept = params * plan.gradient_topk_ratio;
  const double select = quantize_pass_s(cluster, precision, params * (element + 4.0));
  if (op == CollectiveOp::all_reduce)
    return collective_time_s(cluster, CollectiveOp::all_gather, dp, dp.ranks * kept * entry) + select +
           quantize_pass_s(cluster, precision, dp.ranks * kept * entry + params * element);
  return collective_time_s(cluster, CollectiveOp::all_to_all, dp, kept * entry) + select +
         quantize_pass_s(cluster, precision, kept * entry + params / dp.ranks * element);
}

// PowerSGD as PyTorch's powerSGD_hook runs it on one bucket (torch/distributed/algorithms/
// ddp_comm_hooks/powerSGD_hook.py, error feedback and warm start on, its defaults):
//  1. the residual added to the gradients and the sum cloned (add_ and clone: 5 passes);
//  2. the values it does not compress all-reduced; then P = M Q for each matrix (a pass
//     over M), P all-reduced and orthogonalised;
//  3. Q = M^T P (a pass over M), Q all-reduced;
//  4. M = P Q^T written (a pass), the new residual = the clone - the result (3 passes).
// The three all-reduces run one after another, each waiting for the compute before it. The
// factor GEMMs (2 rows cols r FLOPs each, three per matrix) are skinny: priced with the
// passes as one roofline at the GPU's fp32 rate. Gram-Schmidt orthogonalises P and the
// warm-started Q column by column (_orthogonalize: 7 small kernels a column, 3 the last),
// which with the 3 GEMMs are launches of their own. The passes add, copy and subtract
// (no quantisation): priced at the element-wise add's rate, the residual kernel's.
double powersgd_reduce_s(const ClusterSpec& cluster, const GroupLayout& dp, double params, Dtype precision,
                         const LowRankShare& low_rank) {
  const double element = grad_element_bytes(precision);
  const double whole = (1 - low_rank.compressed) * params * element;
  const double collectives = collective_time_s(cluster, CollectiveOp::all_reduce, dp, whole) +
                             collective_time_s(cluster, CollectiveOp::all_reduce, dp, low_rank.p * params * element) +
                             collective_time_s(cluster, CollectiveOp::all_reduce, dp, low_rank.q * params * element);
  ComputeOp passes;
  passes.kind = ComputeKind::elementwise;
  passes.kernel = kernel_names::kResidual;
  passes.dtype = precision;
  passes.flops = low_rank.flops * params;
  passes.bytes = (8 + 3 * low_rank.compressed) * params * element;
  const double launches = std::max(0.0, low_rank.launches * params - 1);
  return collectives + op_time_s(cluster.gpu, passes) + launches * cluster.gpu.kernel_launch_s;
}

}  // namespace

LowRankShare powersgd_share(const ModelSpec& model, const Plan& plan) {
  if (plan.gradient_compression != GradCompression::powersgd) return {};
  LowRankShare share;
  double values = 0;
  for (const bool moe : {false, true}) {
    std::int64_t first = -1, layers = 0;  // the layers of this kind share one op list
    for (std::int64_t l = 0; l < model.layers; ++l)
      if (model.is_moe_layer(l) == moe) layers += 1, first = first < 0 ? l : first;
    if (layers == 0) continue;
    const auto n = static_cast<double>(layers);
    for (const LayerOp& op : build_layer_ops(model, first, plan, MicroBatchShape{1, 128 * plan.cp, Dtype::bf16})) {
      if (op.kind != OpKind::gemm) continue;
      // the weight is n x k (out x in, as PyTorch views a Linear's gradient), one per count
      const double rows = static_cast<double>(op.n), cols = static_cast<double>(op.k);
      const double r = std::min({rows, cols, static_cast<double>(plan.gradient_powersgd_rank)});
      if (rows * cols <= 2 * (rows + cols) * r) continue;  // _should_compress, min_compression_rate 2
      const double matrices = n * static_cast<double>(op.count);
      share.compressed += matrices * rows * cols;
      share.p += matrices * rows * r;
      share.q += matrices * cols * r;
      share.flops += matrices * 3 * 2 * rows * cols * r;
      share.launches += matrices * (3 + 2 * (7 * (r - 1) + 3));
    }
    values += n * static_cast<double>(layer_params_on_gpu(model, plan, moe).total());
  }
  if (values <= 0) return {};
  for (double* x : {&share.compressed, &share.p, &share.q, &share.flops, &share.launches}) *x /= values;
  return share;
}

double sharded_params_per_gpu(std::int64_t dense, std::int64_t expert, const PlanKnobs& plan, bool sharded) {
  if (!sharded) return static_cast<double>(dense + expert);
  return static_cast<double>(dense / plan.zero_shard_group_size() + expert / plan.expert_dp_group_size());
}

double replicate_all_reduce_s(const ClusterSpec& cluster, const Plan& plan, double params, double element,
                              int shard_ranks) {
  if (plan.dp_replicate <= 1 || !plan.shards_optimizer() || params <= 0) return 0;
  const GroupLayout replicas = group_layout(cluster, plan, ParallelGroup::dp_replicate);
  // the shard this rank owns after the reduce-scatter, summed over the replicas
  return collective_time_s(cluster, CollectiveOp::all_reduce, replicas, params / std::max(1, shard_ranks) * element);
}

bool zero3_gather_in_node(const ClusterSpec& cluster, const Plan& plan, bool backward) {
  if (backward && hpz_partition(plan, cluster.gpus_per_node) > 1) return true;
  return plan.dp_replicate > 1 && group_layout(cluster, plan, ParallelGroup::dp_shard).nodes() == 1;
}

std::int64_t zero_calls(double params, std::int64_t bucket) {
  if (bucket <= 0 || params <= static_cast<double>(bucket)) return 1;
  return static_cast<std::int64_t>(std::ceil(params / static_cast<double>(bucket)));
}

ZeroRegather zero_recompute_regather(const ModelSpec& model, const Plan& plan, const StackSpec& stack, bool moe) {
  const auto limit = static_cast<double>(stack.zero_reuse_distance_params);
  if (limit <= 0 || plan.recompute != Recompute::full || !plan.shards_params()) return {};
  std::int64_t layer = 0;
  while (layer < model.layers && model.is_moe_layer(layer) != moe) ++layer;
  if (layer == model.layers) return {};
  // the layer's weights on one GPU, in the order its forward uses them
  std::vector<double> weights;
  for (const LayerOp& op : build_layer_ops(model, layer, plan, MicroBatchShape{1, 128 * plan.cp, Dtype::bf16}))
    if (op.kind == OpKind::gemm) weights.push_back(static_cast<double>(op.k * op.n * op.count));
  double all = 0, after = 0, released = 0;
  ZeroRegather again;
  for (auto w = weights.rbegin(); w != weights.rend(); ++w) {
    // used again after the weights behind it, in the recomputed forward and then the backward
    if (2 * after >= limit) released += *w, again.calls += 1;
    after += *w;
    all += *w;
  }
  again.share = all > 0 ? released / all : 0;
  return again;
}

double zero3_persistent_gather_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack,
                                 std::int64_t layers) {
  if (stack.zero_persistent_tensors <= 0 || !plan.shards_params()) return 0;
  const GroupLayout dp = group_layout(cluster, plan, ParallelGroup::dp);
  if (dp.ranks <= 1) return 0;
  // one all_gather of the small tensors together (latency-bound: their bytes are not counted),
  // then each tensor's chunk copied out of each rank's
  const double tensors = static_cast<double>(layers) * stack.zero_persistent_tensors;
  return collective_time_s(cluster, CollectiveOp::all_gather, dp, 0) +
         dp.ranks * list_host_per_rank_s(stack, CollectiveOp::all_gather) + tensors * dp.ranks * stack.zero_list_copy_s;
}

double zero3_layer_gather_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack, double params,
                            Dtype precision, const GroupLayout& group, bool backward, const ZeroRegather& again) {
  const double element = param_element_bytes(precision);
  // DeepSpeed <= 0.5 under full recompute: the weights released after the recomputed forward,
  // gathered again for the backward (StackSpec::zero_reuse_distance_params)
  const double regather = backward && again.calls > 0 ? dp_calls_s(cluster, stack, group, CollectiveOp::all_gather,
                                                                   again.share * params, element, again.calls)
                                                      : 0.0;
  // ZeRO-Infinity (Rajbhandari et al. 2021 §6.1, bandwidth-centric partitioning): each rank
  // copies its own shard from CPU memory (or the drives) over its own PCIe link, all ranks
  // at once, then the all-gather runs as without offload
  const double fetch = offloaded_param_fetch_s(cluster, plan, params / group.ranks * element);
  if (const int hpz = hpz_partition(plan, cluster.gpus_per_node); backward && hpz > 1) {
    // hpZ (§3.2): inside the node, over the secondary partition's hpz GPUs
    const auto calls = static_cast<double>(zero_calls(params, stack.zero_gather_bucket_params));
    return calls * collective_time_s(cluster, CollectiveOp::all_gather, GroupLayout{hpz, hpz}, params * element / calls);  // (never offloaded)
  }
  if (!quantized_weights(plan))
    return fetch + regather +
           dp_calls_s(cluster, stack, group, CollectiveOp::all_gather, params, element, gather_calls(stack, params));
  // qwZ: each rank quantises its shard, the gathered int8 layer is dequantised whole
  const double shard = params / group.ranks;
  return fetch + regather +
         dp_calls_s(cluster, stack, group, CollectiveOp::all_gather, params, kInt8WireBytes,
                    gather_calls(stack, params)) +
         quantize_pass_s(cluster, precision, shard * (element + kInt8WireBytes)) +
         quantize_pass_s(cluster, precision, params * (kInt8WireBytes + element));
}

StageParams stage_rest_params(const ModelSpec& model, const Plan& plan, int stage, const TrainingWorkload* training) {
  const StageLayers layers = stage_layers(model, plan, stage);
  const bool lora = training != nullptr && training->lora;
  const StageParams all =
      lora ? trainable_stage_params(model, plan, *training, stage) : stage_params(model, plan, stage);
  const StageParams dense =
      lora ? trainable_layer_params(model, plan, *training, false) : layer_params_on_gpu(model, plan, false);
  const StageParams moe = !model.moe ? StageParams{}
                          : lora     ? trainable_layer_params(model, plan, *training, true)
                                     : layer_params_on_gpu(model, plan, true);
  // everything but the layers: stage_params adds the embedding, norm, head and MTP to them
  StageParams rest;
  rest.dense = all.dense - layers.dense * dense.dense - layers.moe * moe.dense;
  rest.expert = all.expert - layers.dense * dense.expert - layers.moe * moe.expert;
  return rest;
}

namespace {

// The stack as it issues the rest's calls: a per-tensor stack one call a weight table (the
// word embedding, learned positions on the first stage; an untied or pipelined head on the
// last), else its buckets as for a layer.
StackSpec rest_call_stack(const StackSpec& stack, const ModelSpec& model, const Plan& plan, int stage) {
  StackSpec rest = stack;
  int tables = 0;
  if (stage == 0) tables += 1 + (model.position == Position::learned ? 1 : 0);
  if (stage == plan.pp - 1 && (!model.tied_embeddings || plan.pp > 1)) tables += 1;
  tables = std::max(tables, 1);
  if (rest.zero_gather_calls > 0) rest.zero_gather_calls = tables;
  if (rest.zero_reduce_calls > 0) rest.zero_reduce_calls = tables;
  return rest;
}

}  // namespace

double zero3_rest_gather_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack, const ModelSpec& model,
                           int stage, Dtype precision) {
  const StageParams rest = stage_rest_params(model, plan, stage);
  if (rest.total() <= 0) return 0;
  return zero3_layer_gather_s(cluster, plan, rest_call_stack(stack, model, plan, stage), rest, precision);
}

double zero_rest_reduce_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack, const ModelSpec& model,
                          const TrainingWorkload& training, int stage, Dtype state, const LowRankShare& low_rank) {
  const StageParams rest = stage_rest_params(model, plan, stage, &training);
  if (rest.total() <= 0) return 0;
  return zero_layer_reduce_s(cluster, plan, rest_call_stack(stack, model, plan, stage), rest, state, low_rank);
}

CollectiveOp dp_gradient_op(const StackSpec& stack, const Plan& plan) {
  if (!plan.shards_optimizer()) return CollectiveOp::all_reduce;
  if (!plan.shards_params() && stack.zero_bucket_all_reduce) return CollectiveOp::all_reduce;
  return CollectiveOp::reduce_scatter;
}

double zero_layer_reduce_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack, double params,
                           Dtype state, const LowRankShare& low_rank, const GroupLayout& group) {
  if (plan.gradient_compression != GradCompression::none && !plan.shards_params()) {  // ZeRO-2's, compressed
    const auto calls = static_cast<double>(zero_calls(params, stack.zero_reduce_bucket_params));
    return calls * stack_gradient_reduce_s(cluster, plan, stack, group, params / calls, state, low_rank);
  }
  const Dtype precision = dp_gradient_dtype(stack, state);
  const double element = grad_element_bytes(precision);
  const CollectiveOp op = dp_gradient_op(stack, plan);
  const std::int64_t calls = reduce_calls(stack, params);
  if (!quantized_gradients(plan))
    return dp_calls_s(cluster, stack, group, op, params, element, calls) +
           replicate_all_reduce_s(cluster, plan, params, element, group.ranks);  // HSDP's, after it
  // qgZ (§3.3): the gradients in int4 through an all-to-all inside the node, then one
  // across nodes, each quantised before and dequantised and reduced after (two passes over
  // the layer's gradients each hop); priced as the reduce-scatter of the int4 bytes
  return dp_calls_s(cluster, stack, group, CollectiveOp::reduce_scatter, params, kInt4WireBytes, calls) +
         2 * quantize_pass_s(cluster, precision, params * 2 * (element + kInt4WireBytes));
}

double zero3_layer_gather_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack,
                            const StageParams& layer, Dtype precision, bool backward, const ZeroRegather& again) {
  return over_dp_groups(cluster, plan, static_cast<double>(layer.dense), static_cast<double>(layer.expert),
                        [&](const GroupLayout& group, double params) {
                          return zero3_layer_gather_s(cluster, plan, stack, params, precision, group, backward, again);
                        });
}

double zero_layer_reduce_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack,
                           const StageParams& layer, Dtype state, const LowRankShare& low_rank) {
  return over_dp_groups(cluster, plan, static_cast<double>(layer.dense), static_cast<double>(layer.expert),
                        [&](const GroupLayout& group, double params) {
                          return zero_layer_reduce_s(cluster, plan, stack, params, state, low_rank, group);
                        });
}

namespace {

// int8/int4 gradients as the executor exchanges them (exec/train/quantized_exchange.hpp),
// each pass over its values on element + wire bytes a value, the quantising ones at the
// "quantize" kernel's measured rate, the dequantising ones at "dequantize"'s
// (dequantize_pass_s): the error-feedback compression of the whole buffer; each rank packs
// the other ranks' chunks ((R-1)/R of the values) and sends them in one all-to-all; it adds
// the chunks it receives, dequantised, to its own. An all-reduce then packs its summed
// chunk, all-gathers the packed chunks and dequantises all R of them. Across nodes a flat
// all-to-all leaves through one NIC a rank (collective_cost.cpp), so the exchange is the
// hierarchical one of ZeRO++'s qgZ (Wang et al. 2023, §3.3: inside the node, then across),
// priced as a reduce-scatter of the same bytes, whose network share spreads over the NICs.
double quantized_exchange_s(const ClusterSpec& cluster, const Plan& plan, CollectiveOp op, const GroupLayout& dp,
                            double params, Dtype precision) {
  const double wire = compressed_grad_bytes(plan), per_value = grad_element_bytes(precision) + wire;
  const double others = params * (dp.ranks - 1) / dp.ranks;
  const CollectiveOp exchange = dp.nodes() == 1 ? CollectiveOp::all_to_all : CollectiveOp::reduce_scatter;
  double t = quantize_pass_s(cluster, precision, params * per_value) +
             collective_time_s(cluster, exchange, dp, params * wire) +
             quantize_pass_s(cluster, precision, others * per_value) +
             dequantize_pass_s(cluster, precision, others * per_value);
  if (op == CollectiveOp::all_reduce)
    t += quantize_pass_s(cluster, precision, params / dp.ranks * per_value) +
         collective_time_s(cluster, CollectiveOp::all_gather, dp, params * wire) +
         dequantize_pass_s(cluster, precision, params * per_value);
  return t;
}

}  // namespace

double dp_gradient_reduce_s(const ClusterSpec& cluster, const Plan& plan, CollectiveOp op, const GroupLayout& dp,
                            double params, Dtype precision, const LowRankShare& low_rank) {
  const double element = grad_element_bytes(precision);
  if (plan.gradient_compression == GradCompression::none) return collective_time_s(cluster, op, dp, params * element);
  if (plan.gradient_compression == GradCompression::topk) return topk_reduce_s(cluster, plan, op, dp, params, precision);
  if (plan.gradient_compression == GradCompression::powersgd)
    return powersgd_reduce_s(cluster, dp, params, precision, low_rank);
  return quantized_exchange_s(cluster, plan, op, dp, params, precision);
}

double stack_gradient_reduce_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack,
                               const GroupLayout& dp, double params, Dtype state, const LowRankShare& low_rank) {
  const Dtype precision = dp_gradient_dtype(stack, state);
  return dp_gradient_reduce_s(cluster, plan, dp_gradient_op(stack, plan), dp, params, precision, low_rank) +
         replicate_all_reduce_s(cluster, plan, params, grad_element_bytes(precision), dp.ranks);  // HSDP's, after it
}

}  // namespace twinsim
