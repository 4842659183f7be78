#include "sim/training/layer_costs.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "models/head_ops.hpp"
#include "models/lora.hpp"
#include "models/megatron_softmax.hpp"
#include "models/op_names.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/cost/moe_dispatch.hpp"
#include "sim/cost/moe_dispatch_deepep.hpp"
#include "sim/cost/power_limit.hpp"
#include "sim/cost/quantize_cost.hpp"
#include "sim/memory/activations.hpp"
#include "sim/memory/hf_eager_memory.hpp"
#include "sim/training/async_tp.hpp"
#include "sim/training/eager_kernels.hpp"
#include "sim/training/fsdp_copies.hpp"
#include "sim/training/rank_layout.hpp"
#include "sim/training/torch_cp_exchange.hpp"

namespace twinsim {

namespace {

// Mixed precision: the transformer layers' GEMMs run in training.precision; attention,
// norms, element-wise ops, the activations between ops and the collectives carrying them
// run in its 16-bit type (activation_dtype, the type the memory model stores them in).
// Under fp8 that is Transformer Engine's recipe: only the layers' linear GEMMs are fp8
// (TE docs, "Using FP8 with Transformer Engine"), attention stays bf16, and Megatron-Core's
// embedding and output layer are not TE modules (megatron/core/models/gpt/gpt_model.py:
// tensor_parallel.ColumnParallelLinear), so the head's GEMMs are 16-bit.
MicroBatchShape micro_batch_shape(const Scenario& s) {
  return training_shape(*s.training, s.stack);
}

ComputeOp as_compute(const LayerOp& op, Dtype dtype, double flops, double bytes, bool backward) {
  ComputeOp c;
  c.dtype = dtype;
  c.flops = flops;
  c.bytes = bytes;
  c.backward = backward;
  c.kernel = op.kernel;
  c.head_dim = op.head_dim;
  c.kv_len = op.flash ? op.kernel_kv_len : 0;  // the sequence-keyed curves are flash kernels' rates, by call
  switch (op.kind) {
    case OpKind::gemm: c.kind = ComputeKind::gemm; break;
    case OpKind::attention: c.kind = ComputeKind::attention; break;
    case OpKind::norm: c.kind = ComputeKind::norm; break;
    default: c.kind = ComputeKind::elementwise; break;
  }
  return c;
}

std::optional<CollectiveOp> as_collective(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce: return CollectiveOp::all_reduce;
    case CollectiveKind::all_gather: return CollectiveOp::all_gather;
    case CollectiveKind::reduce_scatter: return CollectiveOp::reduce_scatter;
    case CollectiveKind::all_to_all: return CollectiveOp::all_to_all;
    // ring attention: each step passes a K,V chunk to the next rank (Liu et al. 2023)
    case CollectiveKind::ring_exchange: return CollectiveOp::send_recv;
    case CollectiveKind::none: return std::nullopt;
  }
  return std::nullopt;
}

// `rows`: whether the collective carries the routed token rows (the count exchange does not)
double collective_s(const Scenario& s, const Collective& c, bool rows, bool& extrapolated) {
  const auto op = as_collective(c.kind);
  if (!op || c.bytes == 0) return 0;
  const ParallelGroup group = c.group == CommGroup::tp    ? ParallelGroup::tp
                              : c.group == CommGroup::cp  ? ParallelGroup::cp
                              : c.group == CommGroup::etp ? ParallelGroup::etp
                                                          : ParallelGroup::ep;
  const GroupLayout layout = group_layout(s.cluster, s.plan, group);
  double bytes = static_cast<double>(c.bytes);
  if (rows && group == ParallelGroup::ep && *op == CollectiveOp::all_to_all && s.model.moe)
    bytes = moe_dispatch_bytes(bytes, *s.model.moe, layout);  // group-limited routing's network share
  const CollectiveCost cost = collective_cost(s.cluster, *op, layout, bytes);
  extrapolated = extrapolated || cost.extrapolated;
  return cost.time_s();
}

// The DeepEP kernel of each pass of `op` where DeepEP runs the token all-to-alls
// (deepep_runs_ep_alltoalls; the dispatch's forward and the combine's backward send tokens out:
// DeepEP's dispatch kernel; the other two its combine); none elsewhere.
std::optional<std::pair<DeepEpKernel, DeepEpKernel>> deepep_kernels(const Scenario& s, const LayerOp& op) {
  const bool token_rows = op.name == op_names::kMoeDispatch || op.name == op_names::kMoeCombine;
  if (!token_rows || !deepep_runs_ep_alltoalls(s)) return std::nullopt;
  if (op.name == op_names::kMoeDispatch) return std::pair{DeepEpKernel::dispatch, DeepEpKernel::combine};
  return std::pair{DeepEpKernel::combine, DeepEpKernel::dispatch};
}

// One pass of a compute op: its time, noting whether it was priced beyond measured data and,
// for the power limit, how long a GEMM or the attention keeps the tensor cores busy (its
// math; a memory-bound one's wait on HBM draws as memory-bound kernels do).
double compute_s(const GpuSpec& gpu, const ComputeOp& c, OpTime& t) {
  const ComputeCost cost = op_cost(gpu, c);
  t.extrapolated = t.extrapolated || cost.extrapolated;
  if (c.kind == ComputeKind::gemm || c.kind == ComputeKind::attention) t.tensor_s += cost.math_s;
  return cost.time_s();
}

// The elements a GEMM pass reads and writes: A (m x k), B (k x n), C (m x n).
double gemm_elements(const ComputeOp& c) {
  const auto m = static_cast<double>(c.m), n = static_cast<double>(c.n), k = static_cast<double>(c.k);
  return m * k + k * n + m * n;
}

// One pass of a GEMM as the GEMMs it runs: `chunks` of m / chunks rows (a pass fused with a TP
// collective by PyTorch's symmetric-memory ops: FusedMatmulSplit, async_tp.hpp) for each of
// `widths` (the separate weights the op list's GEMM stands for, StackSpec::separate_projections:
// their columns summing to c.n, or under `inner` to c.k, the dgrad's), each at its own shape's rate.
double chunked_gemm_s(const GpuSpec& gpu, const ComputeOp& c, int chunks, const std::vector<std::int64_t>& widths,
                      bool inner, OpTime& t) {
  if (chunks <= 1 && widths.size() <= 1) return compute_s(gpu, c, t);
  double total = 0;
  for (const std::int64_t width : widths) {
    ComputeOp chunk = c;
    chunk.m = c.m / chunks;
    (inner ? chunk.k : chunk.n) = width;
    chunk.flops = c.flops * static_cast<double>(width) / static_cast<double>(inner ? c.k : c.n) / chunks;
    chunk.bytes = c.bytes * gemm_elements(chunk) / gemm_elements(c);  // each mm reads its whole A shard
    const ComputeCost cost = op_cost(gpu, chunk);
    t.extrapolated = t.extrapolated || cost.extrapolated;
    t.tensor_s += chunks * cost.math_s;
    total += chunks * cost.time_s();
  }
  return total;
}

// The weights the op list's GEMM stands for, by their columns on this GPU: wq, wk, wv (w1, w3)
// where the stack runs them as separate modules (StackSpec::separate_projections); one otherwise.
std::vector<std::int64_t> projection_widths(const Scenario& s, const LayerOp& op) {
  if (!s.stack.separate_projections || s.model.mla || op.count != 1) return {op.n};
  if (op.name == op_names::kMlpGateUp && op.n % 2 == 0) return {op.n / 2, op.n / 2};
  const std::int64_t q = s.model.q_width() / s.plan.tp, kv = (op.n - q) / 2;
  if (op.name == op_names::kAttnQkv && kv > 0 && q + 2 * kv == op.n) return {q, kv, kv};
  return {op.n};
}

// A GEMM's three passes: forward C = AB, dgrad dA = dC B^T, wgrad dB = A^T dC; each
// moves about the same bytes (two operands read, one result written). `clock`: the clock the
// power limit leaves them, against their curve's; `split`: the passes PyTorch's fused ops
// chunk, over `widths` (projection_widths). `weight_grad`: whether the wgrad runs (a frozen
// weight's, LoRA's base, does not: neither its time nor its tensor-core time counts).
void price_gemm(const GpuSpec& gpu, const StackSpec& stack, Dtype dtype, const LayerOp& op, double clock,
                const FusedMatmulSplit& split, const std::vector<std::int64_t>& widths, bool weight_grad, OpTime& t) {
  ComputeOp c = as_compute(op, dtype, op.fwd_flops, static_cast<double>(op.fwd_bytes), false);
  c.m = op.m, c.n = op.n, c.k = op.k;
  c.groups = op.count;  // a MoE layer's local experts, one GEMM each
  c.library_scale = stack.gemm_library_scale;
  c.gemm_kernel = stack.gemm_kernel;
  c.clock_scale = clock;
  const int gemms = static_cast<int>(widths.size());
  t.fwd_s = chunked_gemm_s(gpu, c, split.fwd_chunks, widths, false, t);
  c.m = op.m, c.n = op.k, c.k = op.n;
  c.flops = op.dgrad_flops;
  c.pass = GemmPass::dgrad;
  t.dgrad_s = chunked_gemm_s(gpu, c, split.dgrad_chunks, widths, true, t);
  t.fwd_launches = split.fwd_chunks * gemms;
  t.dgrad_launches = split.dgrad_chunks * gemms;
  if (!weight_grad) return;
  c.m = op.k, c.n = op.n, c.k = op.m;
  c.flops = op.wgrad_flops;
  c.pass = GemmPass::wgrad;
  t.wgrad_s = chunked_gemm_s(gpu, c, 1, widths, false, t);
  t.wgrad_launches = gemms;
}

// Separate projections (StackSpec::separate_projections): the input gradient sums the
// `gemms` dgrads, one element-wise pass reading each m x k and writing one, in `dtype`. A
// modeling-code census (hf_eager, hf_bf16: models/hf_eager_census.cpp) already counts
// autograd's adds among its row's kernels (bf16: attn.qkv's 2 adds, 12 bytes an element).
double gradient_sum_s(const GpuSpec& gpu, const StackSpec& stack, Dtype dtype, const LayerOp& op, std::size_t gemms,
                      OpTime& t) {
  if (gemms <= 1 || stack.hf_modeling()) return 0;
  ComputeOp sum = as_compute(op, dtype, 0, 0, true);
  sum.kind = ComputeKind::elementwise;
  sum.kernel = kernel_names::kResidual;  // an element-wise sum
  sum.bytes = static_cast<double>(gemms + 1) * static_cast<double>(op.m) * static_cast<double>(op.k) *
              static_cast<double>(dtype_bytes(dtype, 1));
  t.dgrad_bytes += sum.bytes, t.bwd_bytes += sum.bytes, ++t.dgrad_launches;
  return compute_s(gpu, sum, t);
}

// LoRA (training.lora): the frozen base's weight gradient is never computed (its dgrad still
// runs, carrying the gradient down to the adapters of the layers below): price_op_list priced
// no wgrad pass (price_gemm's weight_grad), its bytes, FLOPs and kernel leave here. Each adapter beside
// the layer runs its two low-rank GEMMs, x A (tokens x in x r) and (x A) B (tokens x r x out),
// in every pass (both need their dgrad and wgrad), each its own kernel at its own shape's
// rate, and scales and adds its output into the layer's (PEFT's lora.Linear.forward:
// result + lora_B(lora_A(x)) * scaling: a multiply, 2 tensor passes, and an add, 3), its
// backward scaling the gradient once (2 passes).
void price_lora(const Scenario& s, double clock, const LayerOp& op, OpTime& t) {
  const GpuSpec& gpu = s.cluster.gpu;
  t.bwd_bytes -= t.wgrad_bytes;
  t.bwd_flops -= op.wgrad_flops;
  t.wgrad_bytes = 0;
  t.wgrad_launches = 0;
  const Dtype act = activation_dtype(s.training->precision);
  const auto act_bytes = static_cast<double>(dtype_bytes(act, 1));
  const std::int64_t rank = s.training->lora->rank;
  for (const LoraAdapter& a : lora_adapters(s.model, s.plan, *s.training->lora, op.name)) {
    for (const auto& [k, n] : {std::pair{a.in, rank}, std::pair{rank, a.out}}) {
      LayerOp g;
      g.kind = OpKind::gemm;
      g.m = op.m, g.k = k, g.n = n;
      g.fwd_flops = g.dgrad_flops = g.wgrad_flops = 2.0 * static_cast<double>(op.m) * n * k;
      g.fwd_bytes = static_cast<std::int64_t>(act_bytes * static_cast<double>(op.m * k + op.m * n + k * n));
      OpTime at;
      price_gemm(gpu, s.stack, act, g, clock, {}, {g.n}, true, at);  // the adapters are not TE modules: 16-bit
      t.fwd_s += at.fwd_s, t.dgrad_s += at.dgrad_s, t.wgrad_s += at.wgrad_s, t.tensor_s += at.tensor_s;
      t.fwd_flops += g.fwd_flops, t.bwd_flops += 2 * g.fwd_flops;
      t.fwd_bytes += static_cast<double>(g.fwd_bytes), t.dgrad_bytes += static_cast<double>(g.fwd_bytes);
      t.wgrad_bytes += static_cast<double>(g.fwd_bytes), t.bwd_bytes += 2.0 * static_cast<double>(g.fwd_bytes);
      ++t.fwd_launches, ++t.dgrad_launches, ++t.wgrad_launches;
      t.extrapolated = t.extrapolated || at.extrapolated;
    }
    ComputeOp scale;
    scale.kind = ComputeKind::elementwise;
    scale.kernel = kernel_names::kResidual;
    scale.dtype = act;
    scale.bytes = 5.0 * act_bytes * static_cast<double>(op.m * a.out);
    t.fwd_s += compute_s(gpu, scale, t);
    t.fwd_bytes += scale.bytes;
    scale.backward = true;
    scale.bytes = 2.0 * act_bytes * static_cast<double>(op.m * a.out);
    t.dgrad_s += compute_s(gpu, scale, t);
    t.dgrad_bytes += scale.bytes, t.bwd_bytes += scale.bytes;
    t.fwd_launches += 2, ++t.dgrad_launches;
  }
}

// A low-precision GEMM first quantises its 16-bit activation operand, in the forward its
// input A[m,k], in the backward the output gradient dC[m,n]. fp8: TE's
// fp8_cast_transpose_fused / fp8_cast_transpose_bgrad_fused (NVIDIA/TransformerEngine,
// pytorch/module/linear.py) read the tensor and write an fp8 copy and its fp8 transpose (the
// wgrad GEMM's operand), the amax for the next step's scale taken in the same pass. nvfp4 /
// mxfp4 (TE's NVFP4BlockScaling; the Megatron-Bridge recipe bf16_with_nvfp4_mixed runs every
// layer's fprop, dgrad and wgrad in it): a rowwise copy and a columnwise one (the wgrad's, the
// 16-point random Hadamard transform fused into its cast), each 4-bit values with their block
// scales (scaled_bytes); NVFP4's per-tensor fp32 scale needs the tensor's amax before any block
// is scaled, one more read of the tensor (TE computes the amax, then casts): quantize_bytes
// with two copies and the amax read. The weights are cast once per step (TE's
// is_first_microbatch cache), not per micro-batch: not priced here.
double cast_bytes(Dtype from, Dtype to, double elements) { return quantize_bytes(from, to, elements, 2, true); }

void price_quantize_casts(const GpuSpec& gpu, Dtype from, Dtype to, const LayerOp& op, OpTime& t) {
  const double count = static_cast<double>(op.count);
  ComputeOp cast;
  cast.kind = ComputeKind::elementwise;
  cast.kernel = is_fp4(to) ? kernel_names::kQuantize : kernel_names::kFp8Cast;
  cast.dtype = from;
  cast.bytes = cast_bytes(from, to, count * op.m * op.k);  // the input A[m,k]
  t.fwd_s += compute_s(gpu, cast, t);
  t.fwd_bytes += cast.bytes;
  ++t.fwd_launches;
  cast.backward = true;
  cast.bytes = cast_bytes(from, to, count * op.m * op.n);  // the output gradient dC[m,n]
  t.dgrad_s += compute_s(gpu, cast, t);
  t.bwd_bytes += cast.bytes;
  t.dgrad_bytes += cast.bytes;
  ++t.dgrad_launches;
}

// An eager census's kernels on a row: a row whose element-wise work the census covers runs
// them instead of the op list's fused one; a GEMM or the attention adds its autocast casts
// (and its weight grads' copies) to its own passes.
void add_eager_cost(const EagerCost& eager, OpTime& t) {
  if (eager.covered) {
    t.fwd_s = t.dgrad_s = t.wgrad_s = 0;
    t.fwd_bytes = t.bwd_bytes = t.dgrad_bytes = t.wgrad_bytes = 0;
    t.fwd_launches = t.dgrad_launches = t.wgrad_launches = 0;
    t.tensor_s = 0;
  }
  t.fwd_launches += eager.fwd_kernels;
  t.dgrad_launches += eager.dgrad_kernels;
  t.wgrad_launches += eager.wgrad_kernels;
  t.fwd_s += eager.fwd_s;
  t.dgrad_s += eager.dgrad_s;
  t.wgrad_s += eager.wgrad_s;
  t.fwd_bytes += eager.fwd_bytes;
  t.dgrad_bytes += eager.dgrad_bytes;
  t.wgrad_bytes += eager.wgrad_bytes;
  t.bwd_bytes += eager.dgrad_bytes + eager.wgrad_bytes;
}

// Hugging Face's eager kernels (stack layer_kernels: hf_eager or hf_bf16).
void add_hf_eager(const Scenario& s, const LayerOp& op, OpTime& t) {
  add_eager_cost(
      hf_eager_cost(s.cluster.gpu, s.model, op, eager_extents(s.model, micro_batch_shape(s)), hf_params(s.stack)), t);
}

// The loss left eager beside the op list's fused layer kernels (stack.loss_kernel eager_fp32:
// torchtitan 2024-12 compiles the blocks, not loss_fn): its kernels over this rank's logits
// as the op list's head.loss counts them (models/head_ops.hpp rank_logits).
void add_eager_fp32_loss(const Scenario& s, OpTime& t) {
  const double logits = static_cast<double>(rank_logits(s.model, s.plan, micro_batch_shape(s)));
  add_eager_cost(eager_fp32_loss_cost(s.cluster.gpu, s.model, logits), t);
}

// The softmax scores one GPU's unfused attention core sees a micro-batch (b, np, sq, sk).
SoftmaxShape softmax_shape(const Scenario& s, const LayerOp& op) {
  const MicroBatchShape mb = micro_batch_shape(s);
  return {mb.dtype, mb.micro_batch, heads_per_gpu(s.model, s.plan.tp), mb.seq_len / s.plan.cp, op.kv_len};
}

// Megatron's softmax fallback on the unfused attention core where the stack's rule refuses its
// kernel (stack.softmax, models/megatron_softmax.hpp): the fp32 ops' kernels on the device,
// each a dispatched call on the host (host_torch_op_s), forward (and recompute) and backward.
void add_softmax_fallback(const Scenario& s, const LayerOp& op, OpTime& t) {
  if (op.name != op_names::kAttnCore || op.flash || op.kind != OpKind::attention) return;
  const SoftmaxShape shape = softmax_shape(s, op);
  if (fused_softmax_runs(s.stack.softmax, shape)) return;
  const double scores = static_cast<double>(shape.batch) * shape.heads * shape.queries * shape.keys;
  const EagerCost fallback = softmax_fallback_cost(s.cluster.gpu, scores);
  add_eager_cost(fallback, t);
  t.fwd_host_s += fallback.fwd_kernels * s.stack.host_torch_op_s;
  t.bwd_host_s += fallback.dgrad_kernels * s.stack.host_torch_op_s;
}

// The copy beside a sequence-parallel collective (StackSpec::sp_layout_copies), a memory-bound
// pass over `bytes`.
double layout_copy_s(const GpuSpec& gpu, Dtype dtype, const LayerOp& op, double bytes, OpTime& t) {
  if (bytes <= 0) return 0;
  ComputeOp copy = as_compute(op, dtype, 0, bytes, false);
  copy.kind = ComputeKind::elementwise;
  copy.kernel = kernel_names::kCast;  // a copy: read once, written once
  return compute_s(gpu, copy, t);
}

// Whether the op is the attention core run as PyTorch's load-balanced ring's calls with the
// non-causal ones at their own rates: the stack's ring (cp_exchange: torch_all_gather) on a CP
// plan, and the GPU's non-causal curves measured for the kernel.
bool priced_as_ring_calls(const Scenario& s, const LayerOp& op, std::string_view kernel) {
  return op.kind == OpKind::attention && op.name == op_names::kAttnCore && op.flash && s.plan.cp > 1 &&
         s.stack.cp_exchange == kTorchAllGatherCpExchange &&
         s.cluster.gpu.attention_kernel_noncausal_efficiency_by_seq.contains(kernel);
}

// One pass of the attention core as the ring's calls (torch_ring_calls): the causal call at the
// op's kernel_kv_len (s/cp) keys a query, the non-causal ones half there and half at half of it;
// the op's bytes shared as its FLOPs are.
double ring_calls_s(const GpuSpec& gpu, const ComputeOp& pass, int cp, OpTime& t) {
  const TorchRingCalls calls = torch_ring_calls(cp);
  ComputeOp causal = pass;
  causal.flops = pass.flops * calls.causal_share;
  causal.bytes = pass.bytes / cp;
  double total = compute_s(gpu, causal, t);
  ComputeOp later = pass;
  later.noncausal = true;
  later.flops = pass.flops * calls.noncausal_share / 2;
  later.bytes = pass.bytes * (cp - 1) / (2.0 * cp);
  total += compute_s(gpu, later, t);  // i > rank: half the queries against a peer's s/cp keys
  later.kv_len = std::max<std::int64_t>(1, pass.kv_len / 2);
  total += compute_s(gpu, later, t);  // i <= rank: all the queries against half a peer's keys
  return total;
}

// `gemm_dtype`: the math type of the op list's GEMMs (the layers': training.precision; the
// embedding's and head's: the 16-bit type, but a multi-token-prediction module's: price's
// mtp_module_op); `gemm_clock`: their clock under the power limit (an
// attention op's: its own, price_all's sustained_attention_clock).
OpTime price_op_list(const Scenario& s, const LayerOp& op, Dtype gemm_dtype, double gemm_clock,
                     const FusedMatmulSplit& split) {
  const GpuSpec& gpu = s.cluster.gpu;
  const Dtype dtype = activation_dtype(s.training->precision);
  OpTime t;
  t.name = std::string(op.name);
  t.recomputed = op.recomputed;
  t.recompute_share = op.recompute_share;
  t.fwd_flops = op.fwd_flops;
  t.bwd_flops = op.dgrad_flops + op.wgrad_flops;
  if (op.kind == OpKind::collective) {
    t.category = op.fwd_comm.group == CommGroup::tp   ? TimeCategory::tp_comm
                 : op.fwd_comm.group == CommGroup::cp ? TimeCategory::cp_comm
                                                      : TimeCategory::ep_comm;  // the dispatcher's, ETP's too
    const bool rows = op.name != op_names::kMoeCounts;
    const Collective fwd_comm = tp_wire_collective(op.fwd_comm, s.stack, gemm_dtype, dtype);
    const Collective bwd_comm = tp_wire_collective(op.bwd_comm, s.stack, gemm_dtype, dtype);
    t.fwd_s = collective_s(s, fwd_comm, rows, t.extrapolated);
    t.dgrad_s = collective_s(s, bwd_comm, rows, t.extrapolated);
    if (const auto deepep = deepep_kernels(s, op)) {  // the flex dispatcher's DeepEP kernels instead
      const int ep = s.plan.ep;
      t.fwd_s = deepep_intranode_s(s.cluster, deepep->first, static_cast<double>(op.fwd_comm.bytes), *s.model.moe, ep);
      t.dgrad_s =
          deepep_intranode_s(s.cluster, deepep->second, static_cast<double>(op.bwd_comm.bytes), *s.model.moe, ep);
    }
    if (!s.stack.sp_gather_saved)  // in dgrad_s as far as exposed
      t.regather_s = collective_s(s, op.bwd_regather, rows, t.extrapolated);
    if (s.stack.sp_layout_copies) {  // but where async TP's fused ops take the collective over
      const bool fused = s.plan.tp_comm_overlap && s.stack.matmul_paired_tp();
      if (!fused) t.fwd_s += layout_copy_s(gpu, dtype, op, sp_layout_copy_bytes(fwd_comm), t);
      if (!fused || !micro_pipelined_backward(op, s.stack))
        t.dgrad_s += layout_copy_s(gpu, dtype, op, sp_layout_copy_bytes(bwd_comm), t);
    }
    return t;
  }
  t.fwd_bytes = static_cast<double>(op.fwd_bytes);
  t.fwd_launches = t.dgrad_launches = 1;
  if (op.kind == OpKind::gemm) {
    const std::vector<std::int64_t> widths = projection_widths(s, op);
    price_gemm(gpu, s.stack, gemm_dtype, op, gemm_clock, split, widths, !s.training->lora, t);  // LoRA: frozen base
    t.bwd_bytes = 2 * t.fwd_bytes;  // dgrad and wgrad each move about the forward's bytes
    t.dgrad_bytes = t.wgrad_bytes = t.fwd_bytes;
    t.dgrad_s += gradient_sum_s(gpu, s.stack, dtype, op, widths.size(), t);
    if (dtype_bytes(gemm_dtype, 1) < dtype_bytes(dtype, 1)) price_quantize_casts(gpu, dtype, gemm_dtype, op, t);
    if (s.training->lora) price_lora(s, gemm_clock, op, t);
    return t;
  }
  // attention, norms and element-wise ops: the backward reads the saved inputs and the
  // output gradient and writes the input gradient, about twice the forward's traffic (an op
  // that counts its own backward's bytes: those)
  const double bytes = static_cast<double>(op.fwd_bytes);
  const double backward_bytes = op.bwd_bytes > 0 ? static_cast<double>(op.bwd_bytes) : 2 * bytes;
  ComputeOp fwd = as_compute(op, dtype, op.fwd_flops, bytes, false);
  ComputeOp bwd = as_compute(op, dtype, op.dgrad_flops, backward_bytes, true);
  if (op.kind == OpKind::attention) {
    fwd.attention_kernel = bwd.attention_kernel = resolved_attention_kernel(s.stack, gpu);
    fwd.clock_scale = bwd.clock_scale = gemm_clock;  // price_all's attention clock (power_limit.hpp)
  }
  if (priced_as_ring_calls(s, op, fwd.attention_kernel)) {
    t.fwd_s = ring_calls_s(gpu, fwd, s.plan.cp, t);
    t.dgrad_s = ring_calls_s(gpu, bwd, s.plan.cp, t);
  } else {
    t.fwd_s = compute_s(gpu, fwd, t);
    t.dgrad_s = compute_s(gpu, bwd, t);
  }
  t.bwd_bytes = t.dgrad_bytes = backward_bytes;
  return t;
}

// The host's time to issue the op: host_op_s a compute row, or where the stack counts an MoE
// layer's calls (moe_host_calls: megatron_core) the row's calls at their measured costs; a
// row the stack captures in a CUDA graph only its share of the graph's replay.
void price_host(const Scenario& s, const LayerOp& op, OpTime& t) {
  if (op.kind != OpKind::collective) t.fwd_host_s = t.bwd_host_s = s.stack.host_op_s;
  const bool quantized = dtype_bytes(s.training->precision, 1) < 2;
  const auto calls = s.stack.moe_host_census() && s.model.moe
                         ? megatron_core_moe_host_calls(op.name, s.model.moe->experts / s.plan.ep, quantized)
                         : std::nullopt;
  if (calls) {
    t.fwd_host_s = host_calls_s(s.stack, calls->fwd);
    t.bwd_host_s = host_calls_s(s.stack, calls->bwd);
    t.host_waits_before_fwd = calls->host_waits_before_fwd;
  }
  const CudaGraphScopes& graphs = s.stack.cuda_graph_scopes;
  if (captured_in_graph(graphs, op.name)) t.fwd_host_s = t.bwd_host_s = 0;
  if (const auto replay = graph_replay_host_calls(graphs, op.name)) {
    t.fwd_host_s = host_calls_s(s.stack, replay->fwd);
    t.bwd_host_s = host_calls_s(s.stack, replay->bwd);
  }
}

// Whether the scenario runs PyTorch's symmetric-memory async TP (FusedMatmulSplit).
bool symmetric_memory_tp(const Scenario& s) {
  return s.plan.tp_comm_overlap && s.stack.tp_overlap == kSymmetricMemoryTpOverlap;
}

// Whether `op` of the head's list belongs to a multi-token-prediction module's projection or
// transformer block: their GEMMs run at training.precision as a layer's do, the shared output
// head (mtp.logits) at the 16-bit type as the main head's. DeepSeek-V3 §3.3.1 keeps only the
// embedding, output head, gating, norms and attention in BF16; Megatron-core runs the MTP
// layer's eh_proj and transformer layer inside its fp8 context (NVIDIA/Megatron-LM 00611e6e,
// megatron/core/transformer/multi_token_prediction.py, _proj_and_transformer_layer).
bool mtp_module_op(const LayerOp& op) {
  return op.name.starts_with(op_names::kMtpPrefix) && op.name != op_names::kMtpLogits;
}

// ops[at] priced; `gemm_clock` as price_op_list's.
OpTime price(const Scenario& s, const std::vector<LayerOp>& ops, std::size_t at, Dtype gemm_dtype, double gemm_clock) {
  const LayerOp& op = ops[at];
  const FusedMatmulSplit split =
      symmetric_memory_tp(s) ? symmetric_memory_split(ops, at, s.plan.tp, s.stack) : FusedMatmulSplit{};
  if (mtp_module_op(op)) gemm_dtype = s.training->precision;
  OpTime t = price_op_list(s, op, gemm_dtype, gemm_clock, split);
  if (s.stack.hf_modeling() && op.kind != OpKind::collective) add_hf_eager(s, op, t);
  if (!s.stack.hf_modeling() && s.stack.eager_fp32_loss() && op.name == op_names::kHeadLoss) add_eager_fp32_loss(s, t);
  price_host(s, op, t);
  add_softmax_fallback(s, op, t);
  return t;
}

LayerCost price_at_curves(const Scenario& s, const std::vector<LayerOp>& ops, Dtype gemm_dtype) {
  LayerCost cost;
  cost.stack = s.stack;
  for (std::size_t i = 0; i < ops.size(); ++i) cost.ops.push_back(price(s, ops, i, gemm_dtype, 1.0));
  return cost;
}

// What a micro-batch's passes over these ops ask of the GPU, for its power limit: their
// tensor-core kernels, the rest of their compute, and the time it idles (the collectives
// between them, the host issuing an eager stack's kernels). TP collectives overlapped with
// the GEMMs (plan.tp_comm_overlap) run beside them: no idle time; so does PyTorch's CP
// exchange (`cp_beside`) but for what is waited for (LayerCost::cp_waited_*).
WorkMix work_mix(const LayerCost& lc, bool tp_overlapped, bool cp_beside) {
  WorkMix mix;
  double device_s = 0;
  for (const OpTime& op : lc.ops) {
    const double passes_s = op.fwd_s + op.dgrad_s + op.wgrad_s;
    if (op.category == TimeCategory::compute) {
      mix.tensor_s += op.tensor_s;
      device_s += passes_s;
    } else if (!(tp_overlapped && op.category == TimeCategory::tp_comm) &&
               !(cp_beside && op.category == TimeCategory::cp_comm)) {
      mix.idle_s += passes_s;
    }
  }
  mix.memory_s = device_s - mix.tensor_s;
  const double issued_s = lc.fwd_s(TimeCategory::compute) + lc.bwd_s(TimeCategory::compute);
  mix.idle_s += std::max(0.0, issued_s - device_s);
  return mix;
}

// Priced at the curves' clock, then the GEMMs again at the clock the power limit leaves for
// that mix (the load is taken at the curves' rates, as scripts/duty_cycle_to_catalog.py fits it).
// Under PyTorch's async TP (stack.tp_overlap: matmul) the part of each TP collective its
// fused matmul does not cover is waited for (sim/training/async_tp.hpp); the GPU idles then.
void set_tp_waited(const Scenario& s, const std::vector<LayerOp>& ops, LayerCost& cost) {
  if (!s.plan.tp_comm_overlap || !s.stack.matmul_paired_tp()) return;
  const TpExposed waited = matmul_paired_tp_exposed(ops, cost.ops, s.plan.tp, s.stack);
  cost.tp_waited_fwd_s = waited.fwd_s;
  cost.tp_waited_bwd_s = waited.bwd_s;
  cost.tp_waited_recompute_s = waited.recompute_s;
}

// Under PyTorch's ring attention (stack.cp_exchange: torch_all_gather) the CP entry is its
// all-gathers and dK,dV passes, and the part the local step does not hide is waited for.
void set_cp_waited(const Scenario& s, const std::vector<LayerOp>& ops, LayerCost& cost) {
  if (s.stack.cp_exchange != kTorchAllGatherCpExchange) return;
  const auto named = [&](const char* name) {
    return std::find_if(ops.begin(), ops.end(), [&](const LayerOp& op) { return op.name == name; }) - ops.begin();
  };
  const auto ring = named(op_names::kAttnCpRing), core = named(op_names::kAttnCore);
  if (ring == std::ssize(ops) || core == std::ssize(ops)) return;
  const TorchCpExchange x = torch_cp_exchange(s, ops[ring], cost.ops[core]);
  cost.ops[ring].fwd_s = x.fwd_s;
  cost.ops[ring].dgrad_s = x.bwd_s;
  cost.cp_waited_fwd_s = x.fwd_waited_s;
  cost.cp_waited_bwd_s = x.bwd_waited_s;
}

LayerCost price_all(const Scenario& s, const std::vector<LayerOp>& ops, Dtype gemm_dtype) {
  LayerCost cost = price_at_curves(s, ops, gemm_dtype);
  hide_regathers(ops, cost.ops);
  set_tp_waited(s, ops, cost);
  set_cp_waited(s, ops, cost);
  WorkMix mix = work_mix(cost, s.plan.tp_comm_overlap, s.stack.cp_exchange == kTorchAllGatherCpExchange);
  mix.idle_s += cost.tp_waited_fwd_s + cost.tp_waited_bwd_s + cost.cp_waited_fwd_s + cost.cp_waited_bwd_s;
  const double clock = sustained_gemm_clock(s.cluster.gpu, mix);
  const double attention_clock = sustained_attention_clock(s.cluster.gpu);
  if (clock >= 1 && attention_clock >= 1) return cost;
  cost.gemm_clock = clock;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == OpKind::gemm) cost.ops[i] = price(s, ops, i, gemm_dtype, clock);
    if (ops[i].kind == OpKind::attention && attention_clock < 1)
      cost.ops[i] = price(s, ops, i, gemm_dtype, attention_clock);
  }
  hide_regathers(ops, cost.ops);  // against the GEMMs' times at this clock
  set_tp_waited(s, ops, cost);
  set_cp_waited(s, ops, cost);  // against the attention's time at its clock
  return cost;
}

}  // namespace

bool deepep_runs_ep_alltoalls(const Scenario& s) {
  return s.stack.moe_deepep() && s.model.moe && group_layout(s.cluster, s.plan, ParallelGroup::ep).nodes() <= 1;
}

std::string_view resolved_attention_kernel(const StackSpec& stack, const GpuSpec& gpu) {
  if (stack.attention_kernel == kSdpaFlashAttention)  // its own curves where measured
    return gpu.attention_kernel_efficiency_by_seq.contains(kSdpaFlashAttention) ? kSdpaFlashAttention
                                                                                : kFlash2Attention;
  if (!picked_by_device(stack.attention_kernel)) return stack.attention_kernel;
  return gpu.attention_kernel_efficiency_by_seq.contains(kCudnnAttention) ? kCudnnAttention : kFlash2Attention;
}

// The sum of `value` over the ops that `counts`.
template <typename Counts, typename Value>
double sum_ops(const std::vector<OpTime>& ops, Counts counts, Value value) {
  double total = 0;
  for (const OpTime& op : ops)
    if (counts(op)) total += value(op);
  return total;
}

const auto is_compute = [](const OpTime& op) { return op.category == TimeCategory::compute; };
const auto fwd_time = [](const OpTime& op) { return op.fwd_s; };
const auto bwd_time = [](const OpTime& op) { return op.dgrad_s + op.wgrad_s; };

// A pass whose host waits for the device between runs of its ops, layer after layer as a step
// runs them: after a sync the host issues the runs after it, then the next layer's first run
// (the ops before the first sync), and waits again. The device runs an op once it has run the
// ones before and the host has issued it, so the next layer's first run waits for the host to
// issue this layer's later ones (and its own host time hides behind them).
struct SyncedPass {
  double host_s = 0, device_s = 0;  // since the pass's first sync
  // a run the host takes `host_s` to issue and the device (compute and collectives)
  // `device_s` to run; `sync`: the host then waits for the device
  void issue(double host_s_of_run, double device_s_of_run, bool sync) {
    device_s = std::max(device_s + device_s_of_run, host_s + host_s_of_run);
    host_s += host_s_of_run;
    if (sync) host_s = device_s = std::max(host_s, device_s);
  }
};

// The time of category `c` in a pass over the ops that `in_pass` (`time`: the pass's device
// time of one op, `host`: its host's). Compute is the device's time, or the host's time to
// issue the pass's ops less the device's time on the pass's collectives, whichever is
// longer; where the host syncs with the device inside the pass (`splits`: the forward's),
// its runs serialise as SyncedPass says.
template <typename InPass, typename Time, typename Host>
double pass_s(const LayerCost& lc, TimeCategory c, InPass in_pass, Time time, Host host, bool splits) {
  const auto in_c = [&](const OpTime& op) { return in_pass(op) && op.category == c; };
  if (c != TimeCategory::compute) return sum_ops(lc.ops, in_c, time);
  double device = 0, other = 0, host_s = 0;                               // the whole pass's
  double first_host = 0, first_device = 0, run_host = 0, run_device = 0;  // before the first sync; the current run
  bool synced = false;
  SyncedPass synced_pass;
  for (const OpTime& op : lc.ops) {
    if (!in_pass(op)) continue;
    if (splits && op.host_waits_before_fwd) {
      if (synced) synced_pass.issue(run_host, run_device, true);
      else first_host = run_host, first_device = run_device;
      synced = true;
      run_host = run_device = 0;
    }
    (is_compute(op) ? device : other) += time(op);
    host_s += host(op);
    run_host += host(op);
    run_device += time(op);
  }
  if (!synced) return issued_compute_s(host_s, device, other);
  synced_pass.issue(run_host, run_device, false);  // the layer's last run, then the next layer's first
  synced_pass.issue(first_host, first_device, true);
  return synced_pass.device_s - other;
}

const auto every_op = [](const OpTime&) { return true; };
const auto fwd_host = [](const OpTime& op) { return op.fwd_host_s; };
const auto bwd_host = [](const OpTime& op) { return op.bwd_host_s; };

double LayerCost::fwd_s(TimeCategory c) const { return pass_s(*this, c, every_op, fwd_time, fwd_host, true); }
double LayerCost::bwd_s(TimeCategory c) const { return pass_s(*this, c, every_op, bwd_time, bwd_host, false); }

// compute ops only: the step simulates recomputed collectives as their own tasks (and no
// sync splits the recomputed forward: the dispatcher's token counts are kept)
double LayerCost::recompute_s() const {
  return pass_s(
      *this, TimeCategory::compute, [](const OpTime& op) { return op.recomputed; },
      [](const OpTime& op) { return op.fwd_s * op.recompute_share; }, fwd_host, false);
}

double LayerCost::recompute_comm_s(TimeCategory c) const {
  return sum_ops(
      ops, [c](const OpTime& op) { return op.recomputed && op.category == c; },
      [](const OpTime& op) { return op.fwd_s * op.recompute_share; });
}

double LayerCost::fwd_flops() const { return sum_ops(ops, every_op, [](const OpTime& op) { return op.fwd_flops; }); }
double LayerCost::bwd_flops() const { return sum_ops(ops, every_op, [](const OpTime& op) { return op.bwd_flops; }); }
double LayerCost::fwd_bytes() const { return sum_ops(ops, every_op, [](const OpTime& op) { return op.fwd_bytes; }); }
double LayerCost::bwd_bytes() const { return sum_ops(ops, every_op, [](const OpTime& op) { return op.bwd_bytes; }); }

double LayerCost::recompute_flops() const {
  return sum_ops(ops, [](const OpTime& op) { return op.recomputed; },
                 [](const OpTime& op) { return op.fwd_flops * op.recompute_share; });
}

namespace {

// FSDP2's copies on the compute stream around the layer's gathers and reduce-scatter
// (sim/training/fsdp_copies.hpp): memory-bound passes, a row of their own after the layer's ops.
void add_fsdp_copies(const Scenario& s, bool moe_layer, LayerCost& cost) {
  const FsdpCopyBytes bytes = fsdp_copy_bytes(s, moe_layer);
  if (bytes.fwd <= 0 && bytes.bwd <= 0) return;
  ComputeOp copy;
  copy.kind = ComputeKind::elementwise;
  copy.kernel = kernel_names::kCast;  // a copy: read once, written once
  copy.dtype = activation_dtype(s.training->precision);
  OpTime t;
  t.name = op_names::kDpFsdpCopies;
  copy.bytes = t.fwd_bytes = bytes.fwd;
  t.fwd_s = bytes.fwd > 0 ? op_time_s(s.cluster.gpu, copy) : 0;
  copy.bytes = t.bwd_bytes = t.dgrad_bytes = bytes.bwd;
  t.dgrad_s = bytes.bwd > 0 ? op_time_s(s.cluster.gpu, copy) : 0;
  t.fwd_launches = bytes.fwd > 0 ? 1 : 0;
  t.dgrad_launches = bytes.bwd > 0 ? 1 : 0;
  cost.ops.push_back(t);
}

// PyTorch's ring attention's memory passes around its SDPA calls (sim/training/torch_cp_exchange.hpp):
// a row of their own, on the compute stream, run again wherever the attention core is.
void add_cp_passes(const Scenario& s, const std::vector<LayerOp>& ops, LayerCost& cost) {
  const auto ring =
      std::find_if(ops.begin(), ops.end(), [](const LayerOp& op) { return op.name == op_names::kAttnCpRing; });
  const auto core =
      std::find_if(ops.begin(), ops.end(), [](const LayerOp& op) { return op.name == op_names::kAttnCore; });
  if (ring == ops.end() || core == ops.end()) return;
  const TorchCpPassBytes bytes = torch_cp_pass_bytes(s, *ring);
  if (bytes.fwd <= 0) return;
  ComputeOp pass;
  pass.kind = ComputeKind::elementwise;
  pass.kernel = kernel_names::kCast;  // streaming passes: each element read and written once
  pass.dtype = activation_dtype(s.training->precision);
  OpTime t;
  t.name = op_names::kAttnCpMerge;
  t.recomputed = core->recomputed;
  t.recompute_share = core->recompute_share;
  pass.bytes = t.fwd_bytes = bytes.fwd;
  t.fwd_s = op_time_s(s.cluster.gpu, pass);
  pass.backward = true;
  pass.bytes = t.bwd_bytes = t.dgrad_bytes = bytes.bwd;
  t.dgrad_s = op_time_s(s.cluster.gpu, pass);
  t.fwd_launches = t.dgrad_launches = 1;
  cost.ops.push_back(t);
}

// PyTorch's fused reduce-scatters' sums over their stacked partials (FusedMatmulSplit), a
// memory-bound kernel each at the GPU's element-wise sum rate, in the activations' type (a
// _scaled_mm's out_dtype under float8): a row of their own after the layer's ops, run again
// with the GEMM the recompute reruns.
void add_partials_sums(const Scenario& s, const std::vector<LayerOp>& ops, LayerCost& cost) {
  if (!symmetric_memory_tp(s)) return;
  const Dtype dtype = activation_dtype(s.training->precision);
  ComputeOp sum;
  sum.kind = ComputeKind::elementwise;
  sum.kernel = kernel_names::kResidual;  // an element-wise sum: reads the addends, writes one
  sum.dtype = dtype;
  OpTime t;
  t.name = op_names::kTpPartialsSum;
  double again_s = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const FusedMatmulSplit split = symmetric_memory_split(ops, i, s.plan.tp, s.stack);
    const LayerOp& op = ops[i];
    if (split.fwd_partials_sum) {
      sum.bytes = partials_sum_bytes(op.m, op.n, s.plan.tp, static_cast<double>(dtype_bytes(dtype, 1)));
      const double one_s = op_time_s(s.cluster.gpu, sum);
      t.fwd_s += one_s, t.fwd_bytes += sum.bytes, ++t.fwd_launches;
      if (op.recomputed) again_s += one_s * op.recompute_share;
    }
    if (split.dgrad_partials_sum) {
      sum.bytes = partials_sum_bytes(op.m, op.k, s.plan.tp, static_cast<double>(dtype_bytes(dtype, 1)));
      t.dgrad_s += op_time_s(s.cluster.gpu, sum), t.dgrad_bytes += sum.bytes, ++t.dgrad_launches;
    }
  }
  if (t.fwd_launches + t.dgrad_launches == 0) return;
  t.bwd_bytes = t.dgrad_bytes;
  t.recomputed = again_s > 0;
  t.recompute_share = t.fwd_s > 0 ? again_s / t.fwd_s : 1;
  cost.ops.push_back(t);
}

// PyTorch's fused all-gather-matmuls' copies of the local shard before their first chunk
// (shard_staging_bytes), each a memory-bound copy on the compute stream ahead of the pipeline, so
// never hidden by it: the entries' forward gathers (and the recompute's), the exits' backward
// gathers of the output gradient; the wire's bytes (tp_wire_collective). A row of their own.
void add_shard_stagings(const Scenario& s, const std::vector<LayerOp>& ops, LayerCost& cost) {
  if (!symmetric_memory_tp(s)) return;
  const Dtype dtype = activation_dtype(s.training->precision);
  const Dtype gemm_dtype = s.training->precision;
  OpTime t;
  t.name = op_names::kTpShardStaging;
  double again_s = 0;
  for (const LayerOp& op : ops) {
    if (op.kind != OpKind::collective || op.fwd_comm.group != CommGroup::tp) continue;
    const double fwd = shard_staging_bytes(tp_wire_collective(op.fwd_comm, s.stack, gemm_dtype, dtype), s.plan.tp);
    if (fwd > 0) {
      const double one_s = layout_copy_s(s.cluster.gpu, dtype, op, fwd, t);
      t.fwd_s += one_s, t.fwd_bytes += fwd, ++t.fwd_launches;
      if (op.recomputed) again_s += one_s * op.recompute_share;
    }
    const double bwd = shard_staging_bytes(tp_wire_collective(op.bwd_comm, s.stack, gemm_dtype, dtype), s.plan.tp);
    if (bwd > 0 && micro_pipelined_backward(op, s.stack)) {
      t.dgrad_s += layout_copy_s(s.cluster.gpu, dtype, op, bwd, t), t.dgrad_bytes += bwd, ++t.dgrad_launches;
    }
  }
  if (t.fwd_launches + t.dgrad_launches == 0) return;
  t.bwd_bytes = t.dgrad_bytes;
  t.recomputed = again_s > 0;
  t.recompute_share = t.fwd_s > 0 ? again_s / t.fwd_s : 1;
  cost.ops.push_back(t);
}

}  // namespace

LayerCost cost_layer(const Scenario& s, std::int64_t layer) {
  const std::vector<LayerOp> ops = build_layer_ops(s.model, layer, s.plan, micro_batch_shape(s));
  LayerCost cost = price_all(s, ops, s.training->precision);
  add_cp_passes(s, ops, cost);
  add_partials_sums(s, ops, cost);
  add_shard_stagings(s, ops, cost);
  add_fsdp_copies(s, s.model.is_moe_layer(layer), cost);
  return cost;
}

LayerCost cost_embedding(const Scenario& s) {
  return price_all(s, build_embedding_ops(s.model, s.plan, micro_batch_shape(s)), activation_dtype(s.training->precision));
}

LayerCost cost_head(const Scenario& s) {
  return price_all(s, build_head_ops(s.model, s.plan, micro_batch_shape(s)), activation_dtype(s.training->precision));
}

}  // namespace twinsim
