#include "models/layer_ops.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/checked_math.hpp"
#include "models/op_names.hpp"

namespace twinsim {

std::string_view norm_kernel_name(const ModelSpec& model) {
  return model.norm == Norm::rmsnorm ? kernel_names::kRmsNorm : kernel_names::kLayerNorm;
}

std::int64_t heads_per_gpu(const ModelSpec& model, int tp) { return model.heads / tp; }

std::int64_t kv_heads_per_gpu(const ModelSpec& model, int tp) {
  // vLLM replicates a KV head over the TP ranks that share it (Kwon et al. 2023, and
  // vllm QKVParallelLinear: num_kv_head_replicas = tp / kv_heads)
  return std::max<std::int64_t>(1, model.kv_heads / tp);
}

std::int64_t attention_kv_columns(const ModelSpec& model, int tp) {
  if (model.mla) return heads_per_gpu(model, tp) * (model.qk_head_dim() + model.v_head_dim());
  return 2 * kv_heads_per_gpu(model, tp) * model.head_dim;
}

namespace {

// Per-GPU sizes every op of the layer derives from.
struct LayerShape {
  std::int64_t tokens = 0;   // b * s / cp: tokens of this GPU's sequence chunk
  std::int64_t kv_len = 0;   // s: keys each query attends to (all CP chunks; a window's span)
  std::int64_t h = 0;
  std::int64_t heads = 0;    // query heads on this GPU
  std::int64_t q_cols = 0;   // heads * Q/K head width on this GPU
  std::int64_t k_cols = 0;   // K columns on this GPU: kv heads * head_dim (MLA: every head's K)
  std::int64_t v_cols = 0;   // V columns on this GPU (MLA: heads * v_head_dim)
  std::int64_t o_cols = 0;   // the attention output's columns: heads * V head width
  double imbalance = 1.0;    // MoE: the busiest expert's rows over the mean (MoeSpec::busiest_over_mean)
  std::int64_t sp = 1;       // divisor of tensors outside the TP region: t with SP, else 1
  std::int64_t e = 2;        // bytes per activation element
  int tp = 1, cp = 1, ep = 1, etp = 1;
  bool dropout = false;
  bool clamped = false;       // the gated activation's inputs clamped first (ModelSpec::activation_clamp)
  bool flash = true;
  Recompute recompute = Recompute::none;
  PlanKnobs knobs;  // the plan's recompute_modules: PlanKnobs::recomputes
  bool moe_probs_in_activation = false;  // MicroBatchShape's
  bool moe_padding_copies = false;       // MicroBatchShape's
  std::string_view norm_kernel = kernel_names::kLayerNorm;

  std::optional<Dtype> gemm_quantized;  // the type a GEMM keeps its input in, if not the activations'
  std::int64_t act(std::int64_t elements) const { return checked_mul(elements, e); }
  // A GEMM's own copy of its input, kept for its backward (MicroBatchShape::quantized_gemm_inputs).
  std::int64_t gemm_input(std::int64_t elements) const {
    return gemm_quantized ? scaled_bytes(*gemm_quantized, elements) : act(elements);
  }
  // A [tokens, h] tensor outside the TP region (sharded by SP, else replicated).
  std::int64_t residual_stream() const { return act(tokens * h) / sp; }
};

LayerShape make_shape(const ModelSpec& m, std::int64_t layer, const Plan& p, const MicroBatchShape& mb) {
  if (p.tp < 1 || p.cp < 1 || p.ep < 1) throw std::invalid_argument("plan degrees must be >= 1");
  LayerShape s;
  s.tokens = checked_mul(mb.micro_batch, mb.seq_len) / p.cp;  // CP splits the sequence
  // windowed and global layers of a kind mixed as they occur (ModelSpec::windowed_share)
  const double windowed = m.windowed_share(m.is_moe_layer(layer));
  s.kv_len = windowed > 0 ? std::llround(windowed * static_cast<double>(m.window_span(mb.seq_len)) +
                                          (1 - windowed) * static_cast<double>(mb.seq_len))
                           : mb.seq_len;
  s.h = m.hidden;
  s.heads = heads_per_gpu(m, p.tp);
  s.q_cols = s.heads * m.qk_head_dim();
  s.o_cols = s.heads * m.v_head_dim();
  // MLA rebuilds every local head's K and V from the latent; GQA shares kv_heads of them
  s.k_cols = m.mla ? s.q_cols : kv_heads_per_gpu(m, p.tp) * m.head_dim;
  s.v_cols = attention_kv_columns(m, p.tp) - s.k_cols;
  if (m.moe) s.imbalance = m.moe->busiest_over_mean();
  s.sp = p.sequence_parallel ? p.tp : 1;
  s.e = dtype_bytes(mb.dtype, 1);
  s.gemm_quantized = mb.quantized_gemm_inputs;
  s.moe_probs_in_activation = mb.moe_probs_in_activation;
  s.moe_padding_copies = mb.moe_padding_copies && mb.quantized_gemm_inputs.has_value();
  s.tp = p.tp;
  s.cp = p.cp;
  s.ep = p.ep;
  s.etp = p.etp();
  s.dropout = m.dropout > 0;
  s.clamped = m.activation_clamp > 0 && m.gated();
  s.flash = p.flash_attention;
  s.recompute = p.recompute;
  s.knobs = p;
  s.norm_kernel = norm_kernel_name(m);
  return s;
}

void keep(LayerOp& op, std::string_view name, std::int64_t bytes) {
  if (bytes > 0) op.saved.push_back({name, bytes});
}

// C[m,n] = A[m,k] B[k,n], `count` times: 2mnk FLOPs each (Narayanan et al. 2021, App.);
// backward does two GEMMs of the same size, dgrad = dC B^T and wgrad = A^T dC.
LayerOp gemm(std::string_view name, std::int64_t m, std::int64_t n, std::int64_t k,
             std::int64_t count, const LayerShape& s) {
  LayerOp op;
  op.name = name;
  op.kind = OpKind::gemm;
  op.m = m, op.n = n, op.k = k, op.count = count;
  op.fwd_flops = 2.0 * static_cast<double>(m) * n * k * count;
  op.dgrad_flops = op.fwd_flops;
  op.wgrad_flops = op.fwd_flops;
  // every product checked: UBSan caught k * n overflowing for absurd widths
  op.weight_bytes = s.act(checked_mul(checked_mul(k, n), count));
  const std::int64_t activations = checked_add(checked_mul(m, k), checked_mul(m, n));
  op.fwd_bytes = checked_add(s.act(checked_mul(activations, count)), op.weight_bytes);
  return op;
}

LayerOp elementwise(std::string_view name, std::string_view kernel, std::int64_t bytes) {
  LayerOp op;
  op.name = name;
  op.kind = OpKind::elementwise;
  op.kernel = kernel;
  op.fwd_bytes = bytes;
  return op;
}

// LayerNorm/RMSNorm keeps its input; mean and 1/std per token are negligible (§4.1).
LayerOp norm(std::string_view name, const LayerShape& s) {
  LayerOp op = elementwise(name, s.norm_kernel, 2 * s.residual_stream() + s.act(2 * s.h));
  op.kind = OpKind::norm;
  op.weight_bytes = s.act(2 * s.h);
  keep(op, "input", s.residual_stream());
  return op;
}

LayerOp collective(std::string_view name, CollectiveKind fwd, CollectiveKind bwd, CommGroup group,
                   std::int64_t bytes) {
  LayerOp op;
  op.name = name;
  op.kind = OpKind::collective;
  op.fwd_comm = {fwd, group, bytes};
  op.bwd_comm = {bwd, group, bytes};
  return op;
}

void add_tp_enter(std::vector<LayerOp>& ops, std::string_view name, const LayerShape& s) {
  if (s.tp == 1) return;
  ops.push_back(tp_region_entry(name, s.sp > 1, s.act(s.tokens * s.h), s.gemm_input(s.tokens * s.h)));
}

// Leaving a TP region: f-bar (all-reduce) or with SP g-bar (reduce-scatter).
void add_tp_exit(std::vector<LayerOp>& ops, std::string_view name, const LayerShape& s) {
  if (s.tp == 1) return;
  const std::int64_t full = s.act(s.tokens * s.h);
  if (s.sp > 1)
    ops.push_back(collective(name, CollectiveKind::reduce_scatter, CollectiveKind::all_gather,
                             CommGroup::tp, full));
  else
    ops.push_back(collective(name, CollectiveKind::all_reduce, CollectiveKind::none, CommGroup::tp, full));
}

// Dropout + residual add (Megatron's fused bias-dropout-add): keeps a 1-byte mask (§4.1).
LayerOp residual(std::string_view name, const LayerShape& s) {
  LayerOp op = elementwise(name, kernel_names::kResidual, 3 * s.residual_stream());
  if (s.dropout) {
    const std::int64_t mask = s.tokens * s.h / s.sp;
    op.fwd_bytes += mask;
    keep(op, "dropout_mask", mask);
  }
  return op;
}

// TE's FusedAttnFunc under fp8 with NVTE_FP8_DPA_BWD=1 (transformer_engine/pytorch/attention.py, v2.2)
// saves q_fp8, k_fp8, v_fp8 and out_fp8, 1 byte an element, and the cuDNN fp8 kernel's two fp32
// softmax statistics per head-row, M and ZInv (common/fused_attn/fused_attn_fp8.cu): 8 bytes, where
// the 16-bit kernel keeps one logsumexp (4). The 16-bit O it returns is no longer the attention's.
void keep_fp8_attention(LayerOp& op, const LayerShape& s) {
  keep(op, "q", dtype_bytes(Dtype::fp8, s.tokens * s.q_cols));
  keep(op, "k", dtype_bytes(Dtype::fp8, s.tokens * s.k_cols));
  keep(op, "v", dtype_bytes(Dtype::fp8, s.tokens * s.v_cols));
  keep(op, "out", dtype_bytes(Dtype::fp8, s.tokens * s.o_cols));
  keep(op, "softmax_stats", checked_mul(s.heads * s.tokens, 8));
}

// Q K^T, softmax, dropout, x V for this GPU's heads: 2*tokens*kv_len*q_cols and
// 2*tokens*kv_len*o_cols FLOPs (Korthikanti App. A: 4bs^2h for the whole layer when the
// Q/K and V heads are equally wide; MLA's are not); backward is twice that.
LayerOp core_attention(const LayerShape& s) {
  LayerOp op;
  op.name = op_names::kAttnCore;
  op.kind = OpKind::attention;
  op.flash = s.flash;
  op.head_dim = s.heads > 0 ? s.q_cols / s.heads : 0;
  op.kv_len = s.kv_len;
  // Ring attention runs cp kernel calls a pass, each over one rank's chunk of the sequence
  // (Liu et al. 2023; Transformer Engine's load-balanced ring: a causal call over the rank's
  // own s/cp tokens, then non-causal ones against the other ranks' chunks, of as many FLOPs
  // each): priced at the causal kernel's rate for s/cp keys, shorter calls running slower.
  op.kernel_kv_len = s.kv_len / s.cp;
  // selective recomputation's default module (Korthikanti §4.2.3); full recomputes all anyway
  const bool again = s.recompute == Recompute::full || s.knobs.recomputes(RecomputeModule::core_attn);
  // op-level checkpointing keeps the output and logsumexp alone (apply_op_checkpointing)
  const bool keep_scores = !again && s.recompute != Recompute::selective_op;
  op.fwd_flops = 2.0 * static_cast<double>(s.tokens) * s.kv_len * (s.q_cols + s.o_cols);
  op.dgrad_flops = 2 * op.fwd_flops;
  const std::int64_t q = s.act(s.tokens * s.q_cols), k = s.act(s.tokens * s.k_cols), v = s.act(s.tokens * s.v_cols);
  const std::int64_t out = s.act(s.tokens * s.o_cols);
  if (s.knobs.fp8_attention && !again) {  // Transformer Engine's fp8 attention (PlanKnobs::fp8_attention)
    keep_fp8_attention(op, s);
    op.fwd_bytes = q + k + v + out + checked_mul(s.heads * s.tokens, 4);  // priced as the 16-bit kernel's
    return op;
  }
  keep(op, "q", q);
  keep(op, "k", k);
  keep(op, "v", v);
  if (s.flash) {
    // FlashAttention keeps O (saved by attn.proj) and a fp32 logsumexp per head-row;
    // its dropout mask is regenerated from the RNG state (Dao et al. 2022, §3.1).
    const std::int64_t lse = checked_mul(s.heads * s.tokens, 4);
    op.fwd_bytes = q + k + v + out + lse;
    if (keep_scores) keep(op, "logsumexp", lse);
  } else {
    const std::int64_t scores = checked_mul(s.heads * s.tokens, s.kv_len);  // elements
    const std::int64_t mask = s.dropout ? scores : 0;
    // QK^T writes scores; softmax reads them, writes probs; dropout reads probs,
    // writes dropped probs + mask; x V reads those and V, writes O.
    op.fwd_bytes = q + k + 4 * s.act(scores) + (s.dropout ? 2 * s.act(scores) + mask : 0) + v + out;
    // Korthikanti §4.1: softmax output 2as^2b, dropout mask as^2b, dropout output 2as^2b;
    // selective recomputation drops exactly these (§4.2.3).
    if (keep_scores) {
      keep(op, "softmax_out", s.act(scores));
      keep(op, "dropout_mask", mask);
      keep(op, "dropout_out", s.dropout ? s.act(scores) : 0);
    }
  }
  op.recomputed = again;
  return op;
}

// An RMSNorm over `cols` columns of `tokens` rows inside the TP region (QK-norm, MLA's
// bottleneck norms): reads and writes the tensor, keeps its input for backward.
LayerOp inner_norm(std::string_view name, std::int64_t cols, const LayerShape& s) {
  const std::int64_t tensor = s.act(checked_mul(s.tokens, cols));
  LayerOp op = elementwise(name, kernel_names::kRmsNorm, 2 * tensor);
  op.kind = OpKind::norm;
  keep(op, "input", tensor);
  return op;
}

// RoPE rotating Q and K in place (cos/sin are constants): one fused kernel reads and writes
// them once. Under YaRN Megatron-core runs its eager rotation instead: Megatron-Bridge turns
// apply_rope_fusion off when position_embedding_type is not "rope" (src/megatron/bridge/utils/
// fusions.py, validate_rope_fusion_compatibility; the gpt-oss provider sets "yarn"), and
// Megatron-core's _apply_rotary_pos_emb_bshd (rope_utils.py) then moves the tensor t as: t * cos
// (read, write: 2), rotate_half's -x2 (1) and cat (2), * sin (2), the sum (3), the cat with the
// empty t_pass (2) = 12 passes forward; backward grad * cos (2), grad * sin (2), the negation (1),
// the chunk grads assembled (2), the two paths summed (3), the slice's zeros and copy (3) = 13.
LayerOp rope_rotation(const ModelSpec& m, const LayerShape& s) {
  const std::int64_t tensor = s.act(s.tokens * (s.q_cols + s.k_cols));
  if (m.rope_scaling != RopeScaling::yarn)
    return elementwise(op_names::kAttnRope, kernel_names::kRope, 2 * tensor);           // backward: twice
  LayerOp op = elementwise(op_names::kAttnRope, kernel_names::kResidual, 12 * tensor);  // streaming passes
  op.bwd_bytes = 13 * tensor;
  return op;
}

// Q, K, V of standard (multi-head, grouped-query) attention: one fused column-parallel GEMM.
void add_qkv(std::vector<LayerOp>& ops, const ModelSpec& m, const LayerShape& s) {
  LayerOp qkv = gemm(op_names::kAttnQkv, s.tokens, s.q_cols + s.k_cols + s.v_cols, s.h, 1, s);
  // with SP kept sharded, re-gathered in bwd (§4.2.2); TE's LayerNormLinear keeps it in fp8
  keep(qkv, "input", s.gemm_input(s.tokens * s.h) / s.sp);
  ops.push_back(qkv);
  if (m.qk_norm) ops.push_back(inner_norm(op_names::kAttnQkNorm, s.q_cols + s.k_cols, s));
  if (m.position == Position::rope) ops.push_back(rope_rotation(m, s));
}

// Multi-head latent attention (DeepSeek-V2 §2.1; Megatron-core MultiLatentAttention):
// the down-projections to Q's bottleneck and to the KV latent + shared RoPE key run
// duplicated on every TP rank, their RMSNorms, then column-parallel up-projections to this
// GPU's heads (Q: nope + rope per head; K_nope and V per head from the latent).
void add_mla_qkv(std::vector<LayerOp>& ops, const ModelSpec& m, const LayerShape& s) {
  const MlaSpec& a = *m.mla;
  if (a.q_lora_rank > 0) {
    LayerOp down = gemm(op_names::kAttnQDown, s.tokens, a.q_lora_rank, s.h, 1, s);
    keep(down, "input", s.gemm_input(s.tokens * s.h) / s.sp);
    ops.push_back(down);
    ops.push_back(inner_norm(op_names::kAttnQNorm, a.q_lora_rank, s));
    LayerOp up = gemm(op_names::kAttnQUp, s.tokens, s.q_cols, a.q_lora_rank, 1, s);
    keep(up, "input", s.gemm_input(s.tokens * a.q_lora_rank));
    ops.push_back(up);
  } else {
    LayerOp q = gemm(op_names::kAttnQ, s.tokens, s.q_cols, s.h, 1, s);
    keep(q, "input", s.gemm_input(s.tokens * s.h) / s.sp);
    ops.push_back(q);
  }
  // the KV down-projection reads the same norm output Q's did: kept once, above
  ops.push_back(gemm(op_names::kAttnKvDown, s.tokens, a.kv_lora_rank + a.qk_rope_head_dim, s.h, 1, s));
  ops.push_back(inner_norm(op_names::kAttnKvNorm, a.kv_lora_rank, s));
  LayerOp up = gemm(op_names::kAttnKvUp, s.tokens, s.heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, 1, s);
  keep(up, "input", s.gemm_input(s.tokens * a.kv_lora_rank));
  ops.push_back(up);
  // RoPE on each head's rope part of Q and on the one shared RoPE key
  ops.push_back(elementwise(op_names::kAttnRope, kernel_names::kRope,
                            2 * s.act(s.tokens * (s.heads + 1) * a.qk_rope_head_dim)));
}

void add_attention(std::vector<LayerOp>& ops, const ModelSpec& m, const LayerShape& s) {
  ops.push_back(norm(op_names::kAttnNorm, s));
  add_tp_enter(ops, op_names::kAttnTpEnter, s);
  if (m.mla)
    add_mla_qkv(ops, m, s);
  else
    add_qkv(ops, m, s);
  if (s.cp > 1)  // ring attention passes every other rank's K,V chunk around (Liu et al. 2023)
    ops.push_back(collective(op_names::kAttnCpRing, CollectiveKind::ring_exchange, CollectiveKind::ring_exchange,
                             CommGroup::cp, (s.cp - 1) * s.act(s.tokens * (s.k_cols + s.v_cols))));
  ops.push_back(core_attention(s));
  LayerOp proj = gemm(op_names::kAttnProj, s.tokens, s.h, s.o_cols, 1, s);
  // O, which the 16-bit attention's backward reads too; under fp8 attention the GEMM's own copy
  keep(proj, "input", s.knobs.fp8_attention ? s.gemm_input(s.tokens * s.o_cols) : s.act(s.tokens * s.o_cols));
  ops.push_back(proj);
  add_tp_exit(ops, op_names::kAttnTpExit, s);
  if (m.sandwich_norm) ops.push_back(norm(op_names::kAttnPostNorm, s));
  ops.push_back(residual(op_names::kAttnResidual, s));
}

// A clamped gated activation's inputs (gpt-oss: gate <= 7, -7 <= up <= 7) clamped before the
// fused activation kernel, as Megatron-core runs it (megatron/core/fusions/fused_bias_geglu.py,
// weighted_bias_quick_geglu_impl: input.chunk(2), a clamp of each half, torch.cat of the two,
// then the jit-fused quick-GEGLU) and Hugging Face's GptOssExperts (two clamps in eager): the
// forward reads and writes both halves twice (the clamps, the cat); the backward's clamp
// grads read the grad and the input and write a grad (3 passes over the halves), the chunk's
// grad writes them side by side again (2). It keeps the unclamped input for its mask.
LayerOp activation_clamp(std::string_view name, const LayerShape& s, std::int64_t tokens, std::int64_t ffn) {
  const std::int64_t both_halves = s.act(checked_mul(tokens, 2 * ffn));
  LayerOp op = elementwise(name, kernel_names::kResidual, 4 * both_halves);  // a streaming element-wise rate
  op.bwd_bytes = 5 * both_halves;
  keep(op, "input", both_halves);
  return op;
}

// The routed experts' second-matrix bias (gpt-oss; ModelSpec::bias on an MoE model), which
// Megatron-core adds outside the grouped GEMM, weighted by each row's router probability
// (megatron/core/transformer/moe/experts.py, TEGroupedMLP._apply_bias, from Megatron-LM a329dd6
// "Enable bias in expert mlp [gpt-oss 5/5]", 2025-09; the only path until 2026-08): per local
// expert, eager `t + b * p` (b * p written, then read with t and the sum written), the experts'
// chunks concatenated (read, written): 6 passes over the rows forward (the probabilities in the
// router's dtype, bf16 with moe_router_dtype unset). Backward: the rows' grads assembled for the
// split (2), the grads of b and of p each a product written, then reduced (3 each): 8 passes.
LayerOp expert_output_bias(std::string_view name, std::int64_t rows_bytes) {
  LayerOp op = elementwise(name, kernel_names::kResidual, 6 * rows_bytes);  // a streaming element-wise rate
  op.bwd_bytes = 8 * rows_bytes;
  return op;
}

// An FFN of width `ffn` (this GPU's columns) over `tokens` tokens split evenly over
// `count` experts. GeLU keeps its input (Korthikanti §4.1: 8sbh for ffn = 4h); SwiGLU
// keeps gate and up outputs, both needed for d(silu(g) * u).
void add_ffn(std::vector<LayerOp>& ops, const op_names::FfnOpNames& names, const LayerShape& s, std::int64_t tokens,
             std::int64_t count, std::int64_t ffn, bool swiglu, std::int64_t saved_input) {
  const std::int64_t m = ceil_div(tokens, count);
  LayerOp up = gemm(names.up, m, (swiglu ? 2 : 1) * ffn, s.h, count, s);
  keep(up, "input", saved_input);
  ops.push_back(up);
  if (s.clamped && swiglu) ops.push_back(activation_clamp(names.clamp, s, tokens, ffn));
  const std::int64_t inner = s.act(checked_mul(tokens, ffn));
  LayerOp act = elementwise(names.act, swiglu ? kernel_names::kSwiglu : kernel_names::kGelu, (swiglu ? 3 : 2) * inner);
  // PlanKnobs::fp8_activation_input: SwiGLUFunction saves input.to(torch.float8_e4m3fn), 1 byte
  const std::int64_t kept = s.knobs.fp8_activation_input ? dtype_bytes(Dtype::fp8, checked_mul(tokens, ffn)) : inner;
  keep(act, swiglu ? "gate" : "input", kept);
  if (swiglu) keep(act, "up", kept);
  ops.push_back(act);
  LayerOp down = gemm(names.down, m, s.h, ffn, count, s);
  keep(down, "input", s.gemm_input(checked_mul(tokens, ffn)));
  ops.push_back(down);
}

void add_dense_mlp(std::vector<LayerOp>& ops, const ModelSpec& m, const LayerShape& s) {
  const bool swiglu = m.gated();  // GeGLU moves the same bytes as SwiGLU
  add_ffn(ops, op_names::ffn_op_names(op_names::Ffn::dense, swiglu), s, s.tokens, 1, m.ffn_hidden / s.tp, swiglu,
          s.gemm_input(s.tokens * s.h) / s.sp);
}

// Whether an MoE layer's tokens reach the experts through Megatron-core's alltoall dispatcher
// from the sequence-split stream (each rank routes its own tokens; no tensor-parallel gather
// before the experts), or through the TP region like a dense MLP: every TP rank holding every
// token (TP without SP, where expert_tp = tp and ep = 1: scenario/validate.cpp).
bool moe_dispatches_own_tokens(const LayerShape& s) { return s.tp == 1 || s.sp > 1; }

// The dispatcher's token moves besides its all-to-alls (Megatron-core token_dispatcher.py,
// MoEAlltoAllTokenDispatcher, with moe_permute_fusion: Transformer Engine's fused moe_permute,
// moe_sort_chunks_by_index and moe_unpermute kernels; any dispatcher gathers and scatters the
// same rows): each token's routed copies written out in expert order, the received chunks
// regrouped from source-rank order to local-expert order (more than one local expert under
// EP) and back after the experts, the copies summed into their tokens. Memory-bound passes;
// each one's backward is the same gather or scatter the other way, moving as many bytes.
LayerOp token_move(std::string_view name, std::int64_t bytes) {
  LayerOp op = elementwise(name, kernel_names::kResidual, bytes);  // a streaming copy's rate
  op.bwd_bytes = bytes;
  return op;
}

// Mixture of experts: a router, tokens dispatched to top_k of E experts (all-to-all over
// EP), each GPU running its E/ep experts on on average tokens*top_k*ep/E tokens each
// (Lepikhin et al. 2021, GShard §2; Megatron-core MoE), plus shared experts every token
// visits (Dai et al. 2024, DeepSeekMoE §3) that follow the dense TP. Megatron-core's alltoall
// dispatcher (token_dispatcher.py, MoEAlltoAllTokenDispatcher): each rank routes its own
// tokens, sends them over EP, then all-gathers them over the experts' TP group (expert_tp
// ranks, each holding 1/expert_tp of every local expert's columns), and in reverse reduce-
// scatters the partial outputs over that group before the combine's all-to-all.
void add_moe(std::vector<LayerOp>& ops, const ModelSpec& m, const LayerShape& s) {
  const MoeSpec& moe = *m.moe;
  const bool swiglu = m.gated();
  const std::int64_t own_tokens = s.tokens / s.sp;  // the sequence-split tokens this rank routes
  LayerOp router = gemm(op_names::kMoeRouter, own_tokens, moe.experts, s.h, 1, s);
  keep(router, "input", s.residual_stream());  // the norm output, shared with the experts
  keep(router, "probs", checked_mul(own_tokens * moe.experts, 4));  // fp32 softmax
  ops.push_back(router);
  const bool own = moe_dispatches_own_tokens(s);
  const int gathered = own ? s.etp : 1;  // TP-entered tokens are already on every TP rank
  // the busiest GPU's routed tokens: the mean x the imbalance, which sets the layer's pace
  const auto busiest = [&](std::int64_t tokens) {
    return static_cast<std::int64_t>(std::ceil(static_cast<double>(checked_mul(tokens, moe.top_k)) * s.imbalance));
  };
  const std::int64_t sent = s.act(checked_mul(busiest(own ? own_tokens : s.tokens), s.h));  // over EP
  const std::int64_t routed = busiest(checked_mul(own ? own_tokens : s.tokens, gathered));  // the experts' rows
  const std::int64_t rows = s.act(checked_mul(routed, s.h));
  const std::int64_t tokens_in = s.act(checked_mul(own ? own_tokens : s.tokens, s.h));  // before the copies
  const bool regroup = s.ep > 1 && moe.experts / s.ep > 1;
  if (s.ep > 1)  // the row counts first, so each rank knows what it will receive; the backward reuses them
    ops.push_back(collective(op_names::kMoeCounts, CollectiveKind::all_to_all, CollectiveKind::none, CommGroup::ep,
                             moe.counts_exchange_bytes()));
  ops.push_back(token_move(op_names::kMoePermute, tokens_in + sent));
  if (s.ep > 1)
    ops.push_back(collective(op_names::kMoeDispatch, CollectiveKind::all_to_all, CollectiveKind::all_to_all,
                             CommGroup::ep, sent));
  if (gathered > 1)
    ops.push_back(collective(op_names::kMoeEtpGather, CollectiveKind::all_gather, CollectiveKind::reduce_scatter,
                             CommGroup::etp, rows));
  if (regroup) ops.push_back(token_move(op_names::kMoeSortChunks, 2 * rows));
  // fp8 / fp4 experts' padding copies (MicroBatchShape::moe_padding_copies): the rows read and
  // written padded (the alignment's few extra rows a local expert not counted), the output
  // back after the bias; each backward the same copy the other way
  if (s.moe_padding_copies) ops.push_back(token_move(op_names::kMoeExpertsPad, 2 * rows));
  add_ffn(ops, op_names::ffn_op_names(op_names::Ffn::routed_experts, swiglu), s, routed, moe.experts / s.ep,
          moe.expert_ffn_hidden / s.etp, swiglu, s.gemm_input(checked_mul(routed, s.h)));
  // the combine weights each expert's output rows by their router probability, so its
  // backward needs the rows (Megatron-core moe_utils.unpermute saves them for the probs'
  // grad; the executor's moe_block.cpp too); where the probabilities weight the activation
  // instead (Megatron-core >= 0.13), it keeps them, one fp32 value a row
  if (s.moe_probs_in_activation)
    keep(ops[ops.size() - 2], "probs", checked_mul(routed, 4));  // add_ffn's up, act, down
  else
    keep(ops.back(), "output", rows);
  if (m.bias) ops.push_back(expert_output_bias(op_names::kMoeExpertsBias, rows));
  if (s.moe_padding_copies) ops.push_back(token_move(op_names::kMoeExpertsUnpad, 2 * rows));
  if (regroup) ops.push_back(token_move(op_names::kMoeUnsortChunks, 2 * rows));
  if (gathered > 1)
    ops.push_back(collective(op_names::kMoeEtpScatter, CollectiveKind::reduce_scatter, CollectiveKind::all_gather,
                             CommGroup::etp, rows));
  if (s.ep > 1)
    ops.push_back(collective(op_names::kMoeCombine, CollectiveKind::all_to_all, CollectiveKind::all_to_all,
                             CommGroup::ep, sent));
  ops.push_back(token_move(op_names::kMoeUnpermute, sent + tokens_in));
  if (moe.shared_experts > 0)  // input: the norm output the router already keeps
    add_ffn(ops, op_names::ffn_op_names(op_names::Ffn::shared_experts, swiglu), s, s.tokens, 1,
            moe.shared_experts * moe.shared_width() / s.tp, swiglu, 0);
}

LayerOp* find_op(std::vector<LayerOp>& ops, std::string_view name) {
  for (LayerOp& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

void drop_saved(LayerOp* op, std::string_view tensor) {
  if (!op) return;
  std::erase_if(op->saved, [&](const SavedTensor& t) { return t.name == tensor; });
}

void run_again(std::vector<LayerOp>& ops, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names)
    if (LayerOp* op = find_op(ops, name)) op->recomputed = true;
}

// Megatron-core's output-discarding recomputation of plan.recompute_modules (transformer_config
// recompute_modules; CheckpointWithoutOutput): a module's output is freed once its consumer has
// used it and recomputed in the backward from the module's input, which stays saved.
// layernorm: both norms' outputs (the first GEMMs' inputs: QKV or MLA's down-projections, the
// router's or the dense MLP's); moe_act: the experts' activation output (their down GEMM's
// input); mla_up_proj: MLA's up-projections and RoPE, whose Q, K, V core attention no longer
// keeps. mlp: the dense MLP checkpointed whole (standard checkpointing: only its input kept).
void apply_recompute_modules(std::vector<LayerOp>& ops, const PlanKnobs& plan) {
  using M = RecomputeModule;
  if (plan.recomputes(M::layernorm)) {
    run_again(ops, {op_names::kAttnNorm, op_names::kMlpNorm});
    for (std::string_view consumer : {op_names::kAttnQkv, op_names::kAttnQDown, op_names::kAttnQ, op_names::kMoeRouter,
                                      op_names::kMlpGateUp, op_names::kMlpFc1})
      drop_saved(find_op(ops, consumer), "input");
  }
  if (plan.recomputes(M::moe_act)) {
    run_again(ops, {op_names::kMoeExpertsAct, op_names::kMoeExpertsActClamp});
    drop_saved(find_op(ops, op_names::kMoeExpertsActClamp), "input");  // inside the checkpointed activation
    drop_saved(find_op(ops, op_names::kMoeExpertsDown), "input");
    drop_saved(find_op(ops, op_names::kMoeExpertsFc2), "input");
  }
  if (plan.recomputes(M::mla_up_proj) && find_op(ops, op_names::kAttnKvUp)) {
    run_again(ops, {op_names::kAttnQUp, op_names::kAttnKvUp, op_names::kAttnRope});
    for (std::string_view qkv : {"q", "k", "v"}) drop_saved(find_op(ops, op_names::kAttnCore), qkv);
  }
  if (plan.recomputes(M::mlp) && find_op(ops, op_names::kMlpAct)) {
    run_again(ops, {op_names::kMlpGateUp, op_names::kMlpFc1, op_names::kMlpAct, op_names::kMlpDown, op_names::kMlpFc2});
    for (std::string_view name : {op_names::kMlpAct, op_names::kMlpDown, op_names::kMlpFc2})
      if (LayerOp* op = find_op(ops, name)) op->saved.clear();
  }
}

// DeepSeek-V3's fp8-cached MoE activation (PlanKnobs::fp8_moe_act_cache; arXiv 2412.19437 §3.3.2
// (2), "we cache the inputs of the SwiGLU operator and recompute its output in the backward pass ...
// stored in FP8 with our fine-grained quantization method"; §3.3.1: 1x128 tiles, one fp32 scale
// each): every MoE SwiGLU (routed and shared experts) keeps its gate and up in fp8 plus a 4-byte
// scale per 128 elements of a row, and runs again before its down GEMM's backward, whose input it
// rebuilds (moe_act already drops the routed one; the shared experts' is dropped here).
void apply_fp8_moe_act_cache(std::vector<LayerOp>& ops, const LayerShape& s) {
  constexpr std::int64_t kTile = 128, kScaleBytes = 4;  // §3.3.1's 1x128 tiles, an fp32 scale each
  const auto cache = [&](std::string_view act_name, std::string_view down_name) {
    LayerOp* act = find_op(ops, act_name);
    const LayerOp* down = find_op(ops, down_name);
    if (!act || !down) return;
    const std::int64_t cols = down->k;  // the activation's width: the down GEMM's inner dimension
    for (SavedTensor& t : act->saved) {
      if (t.name != "gate" && t.name != "up") continue;
      const std::int64_t rows = t.bytes / s.e / cols;  // the 16-bit [rows, cols] it kept
      t.bytes = checked_add(dtype_bytes(Dtype::fp8, checked_mul(rows, cols)),
                            checked_mul(checked_mul(rows, ceil_div(cols, kTile)), kScaleBytes));
    }
    act->recomputed = true;
  };
  cache(op_names::kMoeExpertsAct, op_names::kMoeExpertsDown);
  cache(op_names::kMoeSharedAct, op_names::kMoeSharedDown);
  drop_saved(find_op(ops, op_names::kMoeSharedDown), "input");
}

// Full recomputation keeps only the layer input (Korthikanti §4.2.3, Table 2: 2sbh,
// sharded by t with SP) and runs the whole forward again in backward.
void apply_full_recompute(std::vector<LayerOp>& ops) {
  for (LayerOp& op : ops) {
    op.recomputed = true;
    if (op.name != op_names::kAttnNorm) op.saved.clear();
  }
}

// PyTorch's op-level selective checkpointing as torchtitan's "op" policy runs it on a Llama
// layer (torchtitan parallelize_llama.py _apply_ac_to_transformer_block, _save_list): the
// outputs of the attention kernel and of every odd-numbered matmul of the forward (wq 1,
// wk 2, wv 3, wo 4, w1 5, w3 6, w2 7: wq, wv, w1 and w2) are saved, with the layer's input;
// everything else runs again before the backward: the norms, RoPE, wk, wo, w3, SwiGLU's
// product, the residual adds. The op list fuses wq/wk/wv and w1/w3 into one GEMM each, so
// those recompute their K and up shares. Of the TP collectives the list saves the
// reduce-scatter's output (_c10d_functional.reduce_scatter_tensor) alone: the sequence-parallel
// all-gathers (and without SP the all-reduces) are tagged PREFER_RECOMPUTE like any op off the
// list and run again, and torch.compile's partitioner recomputes them too, being inside a
// user-annotated checkpoint region (force_save_collectives, torch/_functorch/partitioners.py).
void apply_op_checkpointing(std::vector<LayerOp>& ops, const LayerShape& s) {
  const auto drop = [](LayerOp& op, std::string_view name) {
    std::erase_if(op.saved, [&](const SavedTensor& t) { return t.name == name; });
  };
  for (LayerOp& op : ops) {
    if (op.kind == OpKind::collective) {
      const CollectiveKind kind = op.fwd_comm.kind;
      op.recomputed = op.fwd_comm.group == CommGroup::tp &&
                      (kind == CollectiveKind::all_gather || kind == CollectiveKind::all_reduce);
      continue;
    }
    const std::string_view name = op.name;
    if (name == op_names::kAttnCore) {  // saved: its output (attn.proj's input), logsumexp, q and v
      op.recomputed = false;
      drop(op, "k");
      keep(op, "logsumexp", checked_mul(s.heads * s.tokens, 4));
      continue;
    }
    if (name == op_names::kMlpDown) {  // w2's output saved, its input rebuilt
      op.recomputed = false;
      drop(op, "input");
      keep(op, "output", s.residual_stream());
      continue;
    }
    op.recomputed = true;
    if (name == op_names::kAttnQkv) {
      op.recompute_share = static_cast<double>(s.k_cols) / static_cast<double>(s.q_cols + s.k_cols + s.v_cols);
      drop(op, "input");
    } else if (name == op_names::kMlpGateUp) {
      op.recompute_share = 0.5;
      drop(op, "input");
    } else if (name == op_names::kMlpNorm) {
      drop(op, "input");
    } else if (name == op_names::kMlpAct) {
      drop(op, "up");
    }
  }
}

}  // namespace

namespace {

// LoRA: a frozen linear layer computes no weight gradient, so under the fused op list a GEMM
// with no adapter beside it keeps no input for its backward (a fused linear module saves its
// input for the weight gradient alone: TE's Linear only if weight.requires_grad, linear.py v2.2
// backward_needs_input; the eager census, stack.layer_kernels hf_bf16, keeps what autograd keeps,
// inputs included, as bitsandbytes' MatMul4Bit does). attn.proj's input is flash attention's
// output O, which the 16-bit attention's backward reads: kept (not under fp8 attention, which
// keeps its own fp8 O). A GEMM with adapters keeps its input for their A's weight gradient, in
// 16 bits even where the frozen base's GEMM runs in fp8: NeMo's ParallelLinearAdapter's linear_in
// is Megatron-core's ColumnParallelLinear / RowParallelLinear, not Transformer Engine's, and saves
// the 16-bit input it is given; each adapter keeps its x A (tokens x r) for B's.
void apply_lora_saved(std::vector<LayerOp>& ops, const ModelSpec& model, const Plan& plan, const LoraSpec& lora,
                      const LayerShape& s) {
  for (LayerOp& op : ops) {
    if (op.kind != OpKind::gemm) continue;
    const std::vector<LoraAdapter> adapters = lora_adapters(model, plan, lora, op.name);
    const bool attention_reads_input = op.name == op_names::kAttnProj && !s.knobs.fp8_attention;
    if (adapters.empty() && !attention_reads_input) drop_saved(&op, "input");
    if (adapters.empty()) continue;
    // the GEMM kept its input quantized (LayerShape::gemm_input: fp8, 1 byte an element; lora
    // refuses fp4): the adapter's copy is the 16-bit tensor
    if (s.gemm_quantized == Dtype::fp8 && !attention_reads_input)
      for (SavedTensor& t : op.saved)
        if (t.name == "input") t.bytes = checked_mul(t.bytes / dtype_bytes(Dtype::fp8, 1), s.e);
    keep(op, "lora_xa", s.act(checked_mul(op.m, static_cast<std::int64_t>(lora.rank * adapters.size()))));
  }
}

}  // namespace

std::vector<LayerOp> build_layer_ops(const ModelSpec& model, std::int64_t layer, const Plan& plan,
                                     const MicroBatchShape& shape) {
  const LayerShape s = make_shape(model, layer, plan, shape);
  std::vector<LayerOp> ops;
  ops.reserve(20);
  add_attention(ops, model, s);
  ops.push_back(norm(op_names::kMlpNorm, s));
  // the TP region's gather and scatter: a dense MLP's, or an MoE layer's shared experts' (the
  // routed experts get their tokens from the dispatcher where it routes each rank's own)
  const bool moe = model.is_moe_layer(layer);
  const bool tp_region = !moe || model.moe->shared_experts > 0 || !moe_dispatches_own_tokens(s);
  if (tp_region) add_tp_enter(ops, op_names::kMlpTpEnter, s);
  if (moe)
    add_moe(ops, model, s);
  else
    add_dense_mlp(ops, model, s);
  if (tp_region) add_tp_exit(ops, op_names::kMlpTpExit, s);
  if (model.sandwich_norm) ops.push_back(norm(op_names::kMlpPostNorm, s));
  ops.push_back(residual(op_names::kMlpResidual, s));
  if (shape.lora) apply_lora_saved(ops, model, plan, *shape.lora, s);
  if (s.recompute == Recompute::full) apply_full_recompute(ops);
  if (s.recompute == Recompute::selective_op) apply_op_checkpointing(ops, s);
  if (s.recompute == Recompute::selective) apply_recompute_modules(ops, s.knobs);
  if (moe && s.knobs.fp8_moe_act_cache) apply_fp8_moe_act_cache(ops, s);
  return ops;
}

std::int64_t saved_bytes(const std::vector<LayerOp>& ops) {
  std::int64_t total = 0;
  for (const LayerOp& op : ops)
    for (const SavedTensor& t : op.saved) total = checked_add(total, t.bytes);
  return total;
}

double forward_flops(const std::vector<LayerOp>& ops) {
  double total = 0;
  for (const LayerOp& op : ops) total += op.fwd_flops;
  return total;
}

double backward_flops(const std::vector<LayerOp>& ops) {
  double total = 0;
  for (const LayerOp& op : ops) total += op.dgrad_flops + op.wgrad_flops;
  return total;
}

LayerOp tp_region_entry(std::string_view name, bool sequence_parallel, std::int64_t bytes,
                        std::int64_t saved_input_bytes) {
  LayerOp op;
  op.name = name;
  op.kind = OpKind::collective;
  if (!sequence_parallel) {
    op.fwd_comm = {CollectiveKind::none, CommGroup::tp, bytes};
    op.bwd_comm = {CollectiveKind::all_reduce, CommGroup::tp, bytes};
    return op;
  }
  op.fwd_comm = {CollectiveKind::all_gather, CommGroup::tp, bytes};
  op.bwd_comm = {CollectiveKind::reduce_scatter, CommGroup::tp, bytes};
  op.bwd_regather = {CollectiveKind::all_gather, CommGroup::tp, saved_input_bytes};
  return op;
}

}  // namespace twinsim
