#include "sim/inference/iteration_ops.hpp"

#include <algorithm>
#include <cmath>

#include "models/checked_math.hpp"
#include "models/op_names.hpp"
#include "sim/inference/quantization.hpp"

namespace twinsim {

void IterationShape::add_chunk(std::int64_t cached, std::int64_t chunk, bool samples) {
  tokens += chunk;
  sequences += 1;
  sampled += samples ? 1 : 0;
  // every query of the chunk against every key up to the chunk's end: the full rectangle,
  // the op list's convention for attention FLOPs (no causal halving, as models/layer_ops.hpp
  // and Narayanan et al. 2021 App.), which is also the count the hardware's attention
  // efficiency is measured against (calibrate/compute_bench.cpp); a decode token's row is
  // all of its context either way
  const double rectangle = static_cast<double>(chunk) * static_cast<double>(cached + chunk);
  attention_pairs += rectangle;
  if (chunk > 1) {
    prefix_pairs += static_cast<double>(chunk) * static_cast<double>(cached);
    square_pairs += static_cast<double>(chunk) * static_cast<double>(chunk);
    square_rows += chunk;
  }
  kv_read_tokens += cached + chunk;
  if (window > 0) {  // keys from max(0, p - window + 1) for the chunk's positions p
    window_pairs += rectangle * causal_pairs(cached, chunk, window) / causal_pairs(cached, chunk, 0);
    window_kv_read_tokens += std::min(cached + chunk, window + chunk - 1);
  }
}

void IterationShape::repeat(std::int64_t times) {
  tokens *= times, sequences *= times, sampled *= times, kv_read_tokens *= times, square_rows *= times;
  window_kv_read_tokens *= times;
  attention_pairs *= static_cast<double>(times);
  prefix_pairs *= static_cast<double>(times);
  square_pairs *= static_cast<double>(times);
  window_pairs *= static_cast<double>(times);
}

IterationShape prefill_shape(std::int64_t batch, std::int64_t prompt_len, std::int64_t window, std::int64_t cached) {
  IterationShape s;
  s.window = window;
  s.add_chunk(cached, prompt_len - cached, true);
  s.repeat(batch);
  return s;
}

IterationShape prompt_shape(const InferenceWorkload& w, std::int64_t window) {
  return prefill_shape(w.batch, w.prompt_len, window, w.prefix_tokens);
}

IterationShape decode_shape(std::int64_t batch, std::int64_t context, std::int64_t window) {
  IterationShape s;
  s.window = window;
  s.add_chunk(context - 1, 1, true);
  s.repeat(batch);
  return s;
}

bool routed_expert_gemm(std::string_view op_name) {
  for (const bool gated : {true, false}) {
    const op_names::FfnOpNames names = op_names::ffn_op_names(op_names::Ffn::routed_experts, gated);
    if (op_name == names.up || op_name == names.down) return true;
  }
  return false;
}

double expected_experts_touched(int experts, int top_k, std::int64_t tokens) {
  if (experts <= 0 || tokens <= 0) return 0;
  const double miss = 1.0 - static_cast<double>(top_k) / experts;  // one token skips a given expert
  return experts * (1.0 - std::pow(miss, static_cast<double>(tokens)));
}

namespace {

// Per-GPU sizes of one iteration.
struct Sizes {
  std::int64_t t = 0;        // new tokens
  std::int64_t h = 0;
  std::int64_t heads = 0;    // this GPU's query heads
  std::int64_t q_cols = 0;   // this GPU's query heads x Q/K head width
  std::int64_t o_cols = 0;   // this GPU's query heads x V head width: the attention output
  std::int64_t kv_cols = 0;  // this GPU's K (or V) heads x head_dim (without MLA)
  std::int64_t head_dim = 0;
  std::int64_t e = 2;        // activation bytes per element
  std::int64_t kv_e_bits = 16;
  int shared_kv_group = 0;  // StackSpec::serving_decode_shared_kv_group
  int cuda_core_group = 0;  // StackSpec::serving_decode_cuda_core_group
  bool prefix_on_fa2 = false;  // StackSpec::serving_prefix_attention_fa2
  Dtype weights = Dtype::fp16;
  Dtype expert_weights = Dtype::fp16;  // the routed experts' (InferenceWorkload::experts_dtype)
  int tp = 1;
  int ep = 1;        // expert parallelism over attention-DP replicas
  int ep_in_tp = 1;  // expert parallelism inside attention's TP group (plan.expert_tp < plan.tp)
  int etp = 1;       // the routed experts' own TP degree (plan.etp())
  std::string_view norm_kernel = kernel_names::kLayerNorm;
  std::int64_t act(std::int64_t elements) const { return checked_mul(elements, e); }
  std::int64_t kv(std::int64_t elements) const { return ceil_div(checked_mul(elements, kv_e_bits), 8); }
};

Sizes make_sizes(const ModelSpec& m, const Plan& p, const InferenceWorkload& w, const IterationShape& shape) {
  Sizes s;
  s.t = shape.tokens;
  s.h = m.hidden;
  s.heads = heads_per_gpu(m, p.tp);
  s.q_cols = s.heads * m.qk_head_dim();
  s.o_cols = s.heads * m.v_head_dim();
  s.head_dim = m.qk_head_dim();
  s.kv_cols = kv_heads_per_gpu(m, p.tp) * m.head_dim;
  s.e = dtype_bytes(serving_activation_dtype(w.weight_dtype), 1);
  s.kv_e_bits = dtype_bits(w.kv_dtype);
  s.weights = w.weight_dtype;
  s.expert_weights = w.experts_dtype();
  s.tp = p.tp;
  s.etp = p.etp();
  const bool experts_in_tp = s.etp < s.tp;  // scenario/validate.cpp: then ep x expert_tp = tp
  s.ep = experts_in_tp ? 1 : p.ep;
  s.ep_in_tp = experts_in_tp ? p.ep : 1;
  s.norm_kernel = norm_kernel_name(m);
  return s;
}

LayerOp memory_op(std::string_view name, OpKind kind, std::string_view kernel, std::int64_t bytes) {
  LayerOp op;
  op.name = name;
  op.kind = kind;
  op.kernel = kernel;
  op.fwd_bytes = bytes;
  return op;
}

// C[m,n] = A[m,k] W[k,n] with `count` weight matrices (grouped experts): 2mnk FLOPs each;
// the weights are read once per pass, whatever m is: this is what makes decode memory-bound.
LayerOp linear(std::string_view name, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t count,
               const Sizes& s, Dtype weight_dtype) {
  LayerOp op;
  op.name = name;
  op.kind = OpKind::gemm;
  op.m = m, op.n = n, op.k = k, op.count = count;
  op.fwd_flops = 2.0 * static_cast<double>(m) * n * k * count;
  op.weight_bytes = checked_mul(weight_matrix_bytes(weight_dtype, checked_mul(k, n)), count);
  op.fwd_bytes = s.act(checked_mul(m * (k + n), count)) + op.weight_bytes;
  return op;
}

LayerOp norm(std::string_view name, std::int64_t rows, const Sizes& s) {
  LayerOp op = memory_op(name, OpKind::norm, s.norm_kernel, s.act(2 * rows * s.h + s.h));
  op.weight_bytes = s.act(s.h);
  return op;
}

LayerOp ep_all_to_all(std::string_view name, std::int64_t bytes) {
  LayerOp op;
  op.name = name;
  op.kind = OpKind::collective;
  op.fwd_comm = {CollectiveKind::all_to_all, CommGroup::ep, bytes};
  return op;
}

void add_all_reduce(std::vector<LayerOp>& ops, std::string_view name, const Sizes& s) {
  if (s.tp == 1) return;
  LayerOp op;
  op.name = name;
  op.kind = OpKind::collective;
  op.fwd_comm = {CollectiveKind::all_reduce, CommGroup::tp, s.act(s.t * s.h)};
  ops.push_back(op);
}

// Attention over the paged cache (vLLM's PagedAttention, Kwon et al. 2023 §4.1, and
// FlashAttention for prefill): QK^T and PV are 2 x (qk + v head width) FLOPs per (query,
// key) pair and head (Korthikanti 2022 App. A: 4 b s^2 h over all s^2 pairs, which
// attention_pairs counts); it reads Q and every cached K,V of its sequences once, writes
// O and the new K,V. A model's windowed layers see the window's pairs (mixed by their
// share, as layer_ops does). MLA caches the latent + RoPE key, one copy on every TP rank;
// a decode-only pass attends over it directly with W_UK, W_UV absorbed (DeepSeek-V2
// §2.1.2; vLLM's MLA decode): 2 x (kv_lora + rope) + 2 x kv_lora FLOPs per pair and head.
// How many times a decode-only pass reads each cached K,V: once, unless the stack's decode
// kernel shares a KV head's read only for MHA and its shared_kv_group, when another GQA
// grouping reads it once per query head (StackSpec::serving_decode_shared_kv_group).
std::int64_t decode_kv_reads(const ModelSpec& m, const IterationShape& shape, const Sizes& s) {
  if (s.shared_kv_group <= 0 || m.mla || shape.tokens != shape.sequences || s.kv_cols <= 0 || m.head_dim <= 0) return 1;
  const std::int64_t group = s.heads / (s.kv_cols / m.head_dim);  // query heads per KV head
  return group == 1 || group == s.shared_kv_group ? 1 : group;
}

// Whether a decode-only pass's attention runs its math on the CUDA cores: the stack's decode
// kernel does so for a 16-bit cache up to its cuda_core_group query heads per KV head
// (StackSpec::serving_decode_cuda_core_group; MLA's absorbed decode is a kernel of its own).
bool decode_on_cuda_cores(const ModelSpec& m, const IterationShape& shape, const Sizes& s) {
  if (s.cuda_core_group <= 0 || m.mla || shape.tokens != shape.sequences || s.kv_e_bits != 16) return false;
  if (s.kv_cols <= 0 || m.head_dim <= 0) return false;
  return s.heads / (s.kv_cols / m.head_dim) <= s.cuda_core_group;
}

LayerOp attention(const ModelSpec& m, std::int64_t layer, const IterationShape& shape, const Sizes& s) {
  const double windowed = m.windowed_share(m.is_moe_layer(layer));
  const double pairs = (1 - windowed) * shape.attention_pairs + windowed * shape.window_pairs;
  const auto kv_read = static_cast<std::int64_t>(std::llround(
      (1 - windowed) * static_cast<double>(shape.kv_read_tokens) + windowed * static_cast<double>(shape.window_kv_read_tokens)));
  LayerOp op;
  op.name = op_names::kAttnCore;
  op.kind = OpKind::attention;
  op.flash = true;
  op.head_dim = s.head_dim;
  op.heads = s.heads;
  std::int64_t cache_cols = 2 * s.kv_cols;  // K and V of this GPU's KV heads
  op.fwd_flops = 2.0 * pairs * static_cast<double>(s.q_cols + s.o_cols);
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    cache_cols = a.kv_lora_rank + a.qk_rope_head_dim;
    if (shape.tokens == shape.sequences) {  // decode only: absorbed, a kernel of its own
      op.fwd_flops = 2.0 * pairs * static_cast<double>(s.heads * (2 * a.kv_lora_rank + a.qk_rope_head_dim));
      op.kernel = kMlaDecodeAttentionKernel;
    }
  }
  const std::int64_t reads = decode_kv_reads(m, shape, s);
  op.fwd_bytes = s.act(s.t * (s.q_cols + s.o_cols)) + s.kv(checked_mul(checked_mul(kv_read, reads) + s.t, cache_cols));
  // the kernel's work items: each sequence's cache, one KV head at a time (MLA: one latent)
  op.kv_items = shape.sequences * (m.mla ? 1 : kv_heads_per_gpu(m, s.tp));
  op.cuda_cores = decode_on_cuda_cores(m, shape, s);
  // the prompt chunks' queries over their cached prefix on a kernel of their own (full
  // layers only: a windowed layer's prefix is priced with the rest)
  if (s.prefix_on_fa2 && !m.mla)
    op.prefix_flops = 2.0 * (1 - windowed) * shape.prefix_pairs * static_cast<double>(s.q_cols + s.o_cols);
  // the prompt chunks' queries over their own keys, where a causal kernel skips the masked
  // half (full layers only, as the prefix; MLA's prefill is not priced on such a curve)
  if (!m.mla && shape.square_rows > 0) {
    op.square_flops = 2.0 * (1 - windowed) * shape.square_pairs * static_cast<double>(s.q_cols + s.o_cols);
    op.square_len = std::llround(shape.square_pairs / static_cast<double>(shape.square_rows));
  }
  return op;
}

LayerOp inner_norm(std::string_view name, std::int64_t cols, const Sizes& s) {
  return memory_op(name, OpKind::norm, kernel_names::kRmsNorm, s.act(2 * s.t * cols));
}

// Q, K, V for the new tokens, with RoPE (MLA: the projections of layer_ops' add_mla_qkv;
// the up-projection of K_nope/V runs on the new tokens' latents only).
void add_qkv(std::vector<LayerOp>& ops, const ModelSpec& m, const Sizes& s) {
  if (!m.mla) {
    ops.push_back(linear(op_names::kAttnQkv, s.t, s.q_cols + 2 * s.kv_cols, s.h, 1, s, s.weights));
    if (m.qk_norm) ops.push_back(inner_norm(op_names::kAttnQkNorm, s.q_cols + s.kv_cols, s));
    if (m.position == Position::rope)  // rotates the new Q and K in place
      ops.push_back(memory_op(op_names::kAttnRope, OpKind::elementwise, kernel_names::kRope, 2 * s.act(s.t * (s.q_cols + s.kv_cols))));
    return;
  }
  const MlaSpec& a = *m.mla;
  if (a.q_lora_rank > 0) {
    ops.push_back(linear(op_names::kAttnQDown, s.t, a.q_lora_rank, s.h, 1, s, s.weights));
    ops.push_back(inner_norm(op_names::kAttnQNorm, a.q_lora_rank, s));
    ops.push_back(linear(op_names::kAttnQUp, s.t, s.q_cols, a.q_lora_rank, 1, s, s.weights));
  } else {
    ops.push_back(linear(op_names::kAttnQ, s.t, s.q_cols, s.h, 1, s, s.weights));
  }
  ops.push_back(linear(op_names::kAttnKvDown, s.t, a.kv_lora_rank + a.qk_rope_head_dim, s.h, 1, s, s.weights));
  ops.push_back(inner_norm(op_names::kAttnKvNorm, a.kv_lora_rank, s));
  ops.push_back(linear(op_names::kAttnKvUp, s.t, s.heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, 1, s,
                       s.weights));
  ops.push_back(memory_op(op_names::kAttnRope, OpKind::elementwise, kernel_names::kRope,
                          2 * s.act(s.t * (s.heads + 1) * a.qk_rope_head_dim)));
}

void add_ffn(std::vector<LayerOp>& ops, const ModelSpec& m, const Sizes& s, std::int64_t ffn,
             std::int64_t experts, std::int64_t rows_per_expert, op_names::Ffn which) {
  const bool swiglu = m.gated();
  const op_names::FfnOpNames names = op_names::ffn_op_names(which, swiglu);
  const std::int64_t rows = experts * rows_per_expert;
  const Dtype weights = which == op_names::Ffn::routed_experts ? s.expert_weights : s.weights;
  ops.push_back(linear(names.up, rows_per_expert, (swiglu ? 2 : 1) * ffn, s.h, experts, s, weights));
  ops.push_back(memory_op(names.act, OpKind::elementwise, swiglu ? kernel_names::kSwiglu : kernel_names::kGelu,
                          (swiglu ? 3 : 2) * s.act(checked_mul(rows, ffn))));
  ops.push_back(linear(names.down, rows_per_expert, s.h, ffn, experts, s, weights));
}

// The two copies around a MoE layer's grouped GEMMs, each reading or writing every routed row
// once and each token's row once (s.act bytes, the layer's activations; a streaming copy's
// rate): before them the tokens' rows go out to their top_k experts' rows (TensorRT-LLM's
// expandInputRowsKernel), after them each token's top_k output rows are summed back, weighted
// by the router (finalizeMoeRoutingKernel, cpp/tensorrt_llm/kernels/cutlass_kernels/moe_gemm/
// moe_kernels.cu; vLLM's moe_sum). Training prices the same two copies (models/layer_ops.cpp).
LayerOp routed_rows_copy(std::string_view name, const Sizes& s, std::int64_t routed) {
  return memory_op(name, OpKind::elementwise, kernel_names::kResidual,
                   s.act(checked_mul(checked_add(routed, s.t), s.h)));
}

// Mixture of experts: each token visits top_k experts; the pass reads the weights of
// every expert some token visits (expected_experts_touched), each running an equal
// share of the routed tokens. Experts are TP-sharded like the dense FFN. With expert
// parallelism (plan.ep > 1) the experts are spread over ep replicas that run each MoE
// layer in lockstep, attention staying data-parallel per replica (vLLM's DP attention +
// EP, DeepSeek-V3 §3.4): an all-to-all over the EP group dispatches every replica's
// routed tokens to the experts' GPUs (after a small one of the rows per expert) and
// another combines the results (DeepEP); each GPU runs its experts / ep experts on the
// routed tokens of all ep replicas, taken as loaded alike, the busiest expert at
// moe.imbalance x the mean.
// With EP inside attention's TP group (plan.expert_tp < plan.tp) every rank holds all the
// replica's tokens after attention's all-reduce, runs its experts / ep experts (expert_ffn /
// expert_tp columns) on the rows routed to them, t top_k / ep, and the partial outputs meet
// in the MLP's TP all-reduce, no all-to-all: TensorRT-LLM 1.0 without attention DP
// (fused_moe_cutlass.py: forward_chunk all-gathers only under use_dp, reducescatter_or_allreduce
// otherwise all-reduces; modeling_qwen3_moe.py builds FusedMoE with reduce_results=True), vLLM
// at dp_size 1 (fused_moe/layer.py: do_naive_dispatch_combine = dp_size > 1 ..., then the TP
// all-reduce), SGLang --ep-size without DP attention.
void add_moe(std::vector<LayerOp>& ops, const ModelSpec& m, const Sizes& s) {
  const MoeSpec& moe = *m.moe;
  ops.push_back(linear(op_names::kMoeRouter, s.t, moe.experts, s.h, 1, s, Dtype::fp16));
  // this replica's routed rows, and what one GPU receives (a 1 / ep_in_tp share inside TP)
  const std::int64_t routed = ceil_div(checked_mul(s.t, moe.top_k), s.ep_in_tp);
  const double touched_all = expected_experts_touched(moe.experts, moe.top_k, checked_mul(s.t, s.ep));
  const auto touched = std::max<std::int64_t>(1, std::llround(touched_all / (s.ep * s.ep_in_tp)));  // of this GPU's
  const auto rows = static_cast<std::int64_t>(std::ceil(static_cast<double>(routed) / static_cast<double>(touched) * moe.imbalance));
  const std::int64_t a2a = s.act(checked_mul(routed, s.h));
  if (s.ep > 1) ops.push_back(ep_all_to_all(op_names::kMoeCounts, moe.counts_exchange_bytes()));  // rows per expert
  ops.push_back(routed_rows_copy(op_names::kMoePermute, s, routed));
  if (s.ep > 1) ops.push_back(ep_all_to_all(op_names::kMoeDispatch, a2a));
  add_ffn(ops, m, s, moe.expert_ffn_hidden / s.etp, touched, rows, op_names::Ffn::routed_experts);
  if (s.ep > 1) ops.push_back(ep_all_to_all(op_names::kMoeCombine, a2a));
  ops.push_back(routed_rows_copy(op_names::kMoeUnpermute, s, routed));
  if (moe.shared_experts > 0)
    add_ffn(ops, m, s, moe.shared_experts * moe.shared_width() / s.tp, 1, s.t, op_names::Ffn::shared_experts);
}

}  // namespace

std::vector<LayerOp> build_iteration_layer_ops(const ModelSpec& m, std::int64_t layer, const Plan& p,
                                               const InferenceWorkload& w, const IterationShape& shape,
                                               int shared_kv_group, int cuda_core_group, bool prefix_on_fa2) {
  Sizes s = make_sizes(m, p, w, shape);
  s.shared_kv_group = shared_kv_group;
  s.cuda_core_group = cuda_core_group;
  s.prefix_on_fa2 = prefix_on_fa2;
  std::vector<LayerOp> ops;
  ops.reserve(16);
  ops.push_back(norm(op_names::kAttnNorm, s.t, s));
  add_qkv(ops, m, s);
  ops.push_back(attention(m, layer, shape, s));
  ops.push_back(linear(op_names::kAttnProj, s.t, s.h, s.o_cols, 1, s, s.weights));
  add_all_reduce(ops, op_names::kAttnTpExit, s);  // Megatron's row-parallel output (Shoeybi 2019, Fig. 3)
  if (m.sandwich_norm) ops.push_back(norm(op_names::kAttnPostNorm, s.t, s));
  ops.push_back(memory_op(op_names::kAttnResidual, OpKind::elementwise, kernel_names::kResidual, 3 * s.act(s.t * s.h)));
  ops.push_back(norm(op_names::kMlpNorm, s.t, s));
  if (m.is_moe_layer(layer))
    add_moe(ops, m, s);
  else
    add_ffn(ops, m, s, m.ffn_hidden / s.tp, 1, s.t, op_names::Ffn::dense);
  add_all_reduce(ops, op_names::kMlpTpExit, s);
  if (m.sandwich_norm) ops.push_back(norm(op_names::kMlpPostNorm, s.t, s));
  ops.push_back(memory_op(op_names::kMlpResidual, OpKind::elementwise, kernel_names::kResidual, 3 * s.act(s.t * s.h)));
  return ops;
}

std::vector<LayerOp> build_iteration_embedding_ops(const ModelSpec& m, const Plan& p, const InferenceWorkload& w,
                                                   const IterationShape& shape) {
  const Sizes s = make_sizes(m, p, w, shape);
  const int tables = m.position == Position::learned ? 2 : 1;
  std::vector<LayerOp> ops;
  ops.push_back(memory_op(op_names::kEmbeddingLookup, OpKind::elementwise, kernel_names::kEmbedding, (tables + 1) * s.act(s.t * s.h)));
  // vocab-parallel embedding: partial rows meet in an all-reduce (vLLM VocabParallelEmbedding)
  add_all_reduce(ops, op_names::kEmbeddingReduce, s);
  return ops;
}

std::vector<LayerOp> build_iteration_head_ops(const ModelSpec& m, const Plan& p, const InferenceWorkload& w,
                                              const IterationShape& shape) {
  const Sizes s = make_sizes(m, p, w, shape);
  const std::int64_t rows = shape.sampled;  // vLLM computes logits only at each sequence's last position
  const std::int64_t vocab_shard = ceil_div(m.vocab, p.tp);
  std::vector<LayerOp> ops;
  ops.push_back(norm(op_names::kHeadNorm, rows, s));
  ops.push_back(linear(op_names::kHeadLogits, rows, vocab_shard, s.h, 1, s, serving_activation_dtype(w.weight_dtype)));
  if (p.tp > 1) {  // vLLM gathers the vocabulary shards of the logits to sample (LogitsProcessor)
    LayerOp gather;
    gather.name = op_names::kHeadGather;
    gather.kind = OpKind::collective;
    gather.fwd_comm = {CollectiveKind::all_gather, CommGroup::tp, s.act(checked_mul(rows, m.vocab))};
    ops.push_back(gather);
  }
  // softmax and sampling read the fp32 logits once
  ops.push_back(memory_op(op_names::kHeadSample, OpKind::elementwise, "", checked_mul(checked_mul(rows, m.vocab), 4)));
  return ops;
}

}  // namespace twinsim
