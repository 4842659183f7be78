// Serving a layer of multi-head latent attention (DeepSeek-V2 §2.1; vLLM's MLA backend):
// the cache holds each token's normed latent c_KV and its rotated RoPE key, [kv_lora +
// rope] per layer, whole on every TP rank. A prefill rebuilds every cached row's K_nope
// and V per head from the latent (W_UKV) and attends as training does; a decode step
// absorbs W_UK into the query and W_UV into the output (§2.1.2), attending over the
// latent rows themselves as one shared head of kv_lora + rope columns, V their first
// kv_lora, so no K or V is rebuilt (kernels/cpu/kv_cache_attention.hpp).
#include <cmath>
#include <string>

#include "exec/model/columns.hpp"
#include "exec/model/decoder.hpp"
#include "exec/model/norm_op.hpp"
#include "exec/model/tp_region.hpp"
#include "models/op_names.hpp"

namespace twinsim::exec {

constexpr MemCategory kAct = MemCategory::activations;

namespace {

float* weight(ParamBlock& b, const std::string& name) { return b.param(b.index_of(name)); }

std::string attn_prefix(int layer) { return "layer" + std::to_string(layer) + ".attn."; }

// One rank's MLA widths: heads are its TP share; a cache row is [c_KV (kv_lora) | k_R (rope)].
struct MlaDims {
  int h, heads, nope, rope, qk, vd, kvl, lat, ql, kv_cols;
  explicit MlaDims(const TransformerConfig& c)
      : h(c.hidden()),
        heads(c.local_heads()),
        nope(static_cast<int>(c.model.mla->qk_nope_head_dim)),
        rope(static_cast<int>(c.model.mla->qk_rope_head_dim)),
        qk(nope + rope),
        vd(static_cast<int>(c.model.mla->v_head_dim)),
        kvl(static_cast<int>(c.model.mla->kv_lora_rank)),
        lat(kvl + rope),
        ql(static_cast<int>(c.model.mla->q_lora_rank)),
        kv_cols(nope + vd) {}
};

}  // namespace

Tensor Decoder::mla_attention(const ModelContext& ctx, int i, const float* x, int n) {
  ParamBlock& p = *layers_[i];
  const std::string pre = attn_prefix(i);
  const MlaDims d(step_);
  const int rows = batch_ * n;
  Tensor normed = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * d.h);
  {
    auto op = ctx.op(i, op_names::kAttnNorm, Pass::fwd);
    NormSaved saved;
    norm_forward(ctx, step_, x, weight(p, pre + "norm.weight"), nullptr, normed.data(), saved, rows);
  }
  Tensor q = mla_query(ctx, i, normed.data(), n);
  mla_append_latents(ctx, i, normed.data(), q.data(), n);
  Tensor out = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * d.heads * d.vd);
  if (n > 1) mla_prefill_attend(ctx, i, q.data(), out.data(), n);
  else mla_decode_attend(ctx, i, q.data(), out.data());
  Tensor partial = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * d.h);
  {
    auto op = ctx.op(i, op_names::kAttnProj, Pass::fwd);
    ctx.kernels().linear_forward(out.data(), weight(p, pre + "proj.weight"), nullptr, partial.data(), rows,
                                 d.heads * d.vd, d.h);
  }
  if (ctx.tp_size() > 1) {
    auto op = ctx.op(i, op_names::kAttnTpExit, Pass::fwd);
    all_reduce_tp(ctx, partial.data(), partial.size());
  }
  q.release();
  out.release();
  Tensor y = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * d.h);
  auto op = ctx.op(i, op_names::kAttnResidual, Pass::fwd);
  ctx.kernels().residual_forward(x, partial.data(), nullptr, y.data(), rows, d.h);
  return y;
}

// Q [rows, heads x (nope + rope)], RoPE not yet applied: through the bottleneck and its
// RMSNorm (q_lora_rank > 0), or one W_Q.
Tensor Decoder::mla_query(const ModelContext& ctx, int i, const float* normed, int n) {
  ParamBlock& p = *layers_[i];
  const std::string pre = attn_prefix(i);
  const MlaDims d(step_);
  const int rows = batch_ * n;
  Tensor q = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * d.heads * d.qk);
  if (d.ql == 0) {
    auto op = ctx.op(i, op_names::kAttnQ, Pass::fwd);
    ctx.kernels().linear_forward(normed, weight(p, pre + "q.weight"), nullptr, q.data(), rows, d.h, d.heads * d.qk);
    return q;
  }
  Tensor latent_in = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * d.ql);
  {
    auto op = ctx.op(i, op_names::kAttnQDown, Pass::fwd);
    ctx.kernels().linear_forward(normed, weight(p, pre + "q_down.weight"), nullptr, latent_in.data(), rows, d.h, d.ql);
  }
  Tensor latent = Tensor::uninitialized(kAct, latent_in.size()), rstd(kAct, static_cast<std::size_t>(rows));
  {
    auto op = ctx.op(i, op_names::kAttnQNorm, Pass::fwd);
    ctx.kernels().rmsnorm_forward(latent_in.data(), weight(p, pre + "q_norm.weight"), latent.data(), rstd.data(), rows,
                                  d.ql, step_.norm_eps);
  }
  latent_in.release();
  auto op = ctx.op(i, op_names::kAttnQUp, Pass::fwd);
  ctx.kernels().linear_forward(latent.data(), weight(p, pre + "q_up.weight"), nullptr, q.data(), rows, d.ql,
                               d.heads * d.qk);
  return q;
}

// The new rows' normed latent and rotated RoPE key, into the cache at their positions; and
// RoPE on each head's rope part of q.
void Decoder::mla_append_latents(const ModelContext& ctx, int i, const float* normed, float* q, int n) {
  ParamBlock& p = *layers_[i];
  const std::string pre = attn_prefix(i);
  const MlaDims d(step_);
  const int rows = batch_ * n;
  float* cache = latent_cache_[i].data();  // [batch, max_len, lat]
  Tensor down = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * d.lat);
  {
    auto op = ctx.op(i, op_names::kAttnKvDown, Pass::fwd);
    ctx.kernels().linear_forward(normed, weight(p, pre + "kv_down.weight"), nullptr, down.data(), rows, d.h, d.lat);
  }
  Tensor c = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * d.kvl);
  Tensor c_normed = Tensor::uninitialized(kAct, c.size()), rstd(kAct, static_cast<std::size_t>(rows));
  Tensor k_rope = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * d.rope);
  {
    auto op = ctx.op(i, op_names::kAttnKvNorm, Pass::fwd);
    copy_out(ctx.device(), down.data(), Columns{rows, 1, d.lat, 0, d.kvl}, c.data());
    ctx.kernels().rmsnorm_forward(c.data(), weight(p, pre + "kv_norm.weight"), c_normed.data(), rstd.data(), rows,
                                  d.kvl, step_.norm_eps);
  }
  auto op = ctx.op(i, op_names::kAttnRope, Pass::fwd);
  copy_out(ctx.device(), down.data(), Columns{rows, 1, d.lat, d.kvl, d.rope}, k_rope.data());
  ctx.kernels().rope_forward(k_rope.data(), k_rope.data(), batch_, n, 1, d.rope, step_.rope_theta, length_);
  for (int b = 0; b < batch_; ++b)
    for (int j = 0; j < n; ++j) {
      float* row = cache + (static_cast<std::size_t>(b) * max_len_ + length_ + j) * d.lat;
      const std::size_t r = static_cast<std::size_t>(b) * n + j;
      ctx.device().copy_on_device(row, c_normed.data() + r * d.kvl, d.kvl * sizeof(float));
      ctx.device().copy_on_device(row + d.kvl, k_rope.data() + r * d.rope, d.rope * sizeof(float));
    }
  const Columns q_rope_cols{rows, d.heads, d.qk, d.nope, d.rope};  // each head's rope part of Q
  Tensor q_rope = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * d.heads * d.rope);
  copy_out(ctx.device(), q, q_rope_cols, q_rope.data());
  ctx.kernels().rope_forward(q_rope.data(), q_rope.data(), batch_, n, d.heads, d.rope, step_.rope_theta, length_);
  copy_in(ctx.device(), q_rope.data(), q_rope_cols, q);
}

// Prefill: K_nope and V per head rebuilt for every cached row from the latent, then
// attention as training runs it.
void Decoder::mla_prefill_attend(const ModelContext& ctx, int i, const float* q, float* out, int n) {
  const MlaDims d(step_);
  const int len = length_ + n;
  const float* cache = latent_cache_[i].data();
  const float* w_ukv = weight(*layers_[i], attn_prefix(i) + "kv_up.weight");  // per head: nope rows, then v rows
  Tensor kk = Tensor::uninitialized(kAct, static_cast<std::size_t>(batch_) * len * d.heads * d.qk);
  Tensor vv = Tensor::uninitialized(kAct, static_cast<std::size_t>(batch_) * len * d.heads * d.vd);
  {
    auto op = ctx.op(i, op_names::kAttnKvUp, Pass::fwd);
    Tensor c = Tensor::uninitialized(kAct, static_cast<std::size_t>(batch_) * len * d.kvl);
    for (int b = 0; b < batch_; ++b)
      copy_out(ctx.device(), cache + static_cast<std::size_t>(b) * max_len_ * d.lat, Columns{len, 1, d.lat, 0, d.kvl},
               c.data() + static_cast<std::size_t>(b) * len * d.kvl);
    Tensor kv = Tensor::uninitialized(kAct, static_cast<std::size_t>(batch_) * len * d.heads * d.kv_cols);
    ctx.kernels().linear_forward(c.data(), w_ukv, nullptr, kv.data(), batch_ * len, d.kvl, d.heads * d.kv_cols);
    for (int b = 0; b < batch_; ++b)
      for (int t = 0; t < len; ++t) {
        const std::size_t r = static_cast<std::size_t>(b) * len + t;
        const float* k_rope = cache + (static_cast<std::size_t>(b) * max_len_ + t) * d.lat + d.kvl;
        for (int hd = 0; hd < d.heads; ++hd) {
          const float* from = kv.data() + (r * d.heads + hd) * d.kv_cols;
          float* key = kk.data() + (r * d.heads + hd) * d.qk;
          ctx.device().copy_on_device(key, from, d.nope * sizeof(float));
          ctx.device().copy_on_device(key + d.nope, k_rope, d.rope * sizeof(float));
          ctx.device().copy_on_device(vv.data() + (r * d.heads + hd) * d.vd, from + d.nope, d.vd * sizeof(float));
        }
      }
  }
  auto op = ctx.op(i, op_names::kAttnCore, Pass::fwd);
  KvCacheAttentionShape shape{batch_, n, length_, len, d.heads, d.heads, d.qk};
  shape.v_head_dim = d.vd;
  ctx.kernels().kv_cache_attention_forward(q, kk.data(), vv.data(), out, shape);
}

// Decode: W_UK absorbed into the query, attention over the latent rows as one shared head,
// W_UV applied to its latent output.
void Decoder::mla_decode_attend(const ModelContext& ctx, int i, const float* q, float* out) {
  const MlaDims d(step_);
  const int rows = batch_;
  float* cache = latent_cache_[i].data();
  const float* w_ukv = weight(*layers_[i], attn_prefix(i) + "kv_up.weight");  // per head: nope rows, then v rows
  Tensor q_abs = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * d.heads * d.lat);
  Tensor part = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * std::max(d.nope, d.kvl));
  Tensor res = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * std::max(d.kvl, d.vd));
  {
    auto op = ctx.op(i, op_names::kAttnKvUp, Pass::fwd);
    for (int hd = 0; hd < d.heads; ++hd) {  // q_nope W_UK for head hd: [rows, nope] x [nope, kvl]
      copy_out(ctx.device(), q, Columns{rows, 1, d.heads * d.qk, hd * d.qk, d.nope}, part.data());
      ctx.kernels().gemm_forward(part.data(), w_ukv + static_cast<std::size_t>(hd) * d.kv_cols * d.kvl, res.data(),
                                 rows, d.kvl, d.nope, false, false);
      copy_in(ctx.device(), res.data(), Columns{rows, 1, d.heads * d.lat, hd * d.lat, d.kvl}, q_abs.data());
    }
    Tensor q_rope = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * d.heads * d.rope);
    copy_out(ctx.device(), q, Columns{rows, d.heads, d.qk, d.nope, d.rope},
             q_rope.data());  // the rope parts as they are
    copy_in(ctx.device(), q_rope.data(), Columns{rows, d.heads, d.lat, d.kvl, d.rope}, q_abs.data());
  }
  Tensor latent_out = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * d.heads * d.kvl);
  {
    auto op = ctx.op(i, op_names::kAttnCore, Pass::fwd);
    KvCacheAttentionShape shape{batch_, 1, length_, max_len_, d.heads, 1, d.lat};
    shape.v_head_dim = d.kvl;
    shape.v_row_stride = d.lat;
    shape.scale = 1.0f / std::sqrt(static_cast<float>(d.qk));  // the original head's width
    ctx.kernels().kv_cache_attention_forward(q_abs.data(), cache, cache, latent_out.data(), shape);
  }
  auto op = ctx.op(i, op_names::kAttnKvUp, Pass::fwd);
  for (int hd = 0; hd < d.heads; ++hd) {  // o_hd = latent_out_hd W_UV_hd^T: [rows, kvl] x [kvl, vd]
    copy_out(ctx.device(), latent_out.data(), Columns{rows, 1, d.heads * d.kvl, hd * d.kvl, d.kvl}, part.data());
    ctx.kernels().gemm_forward(part.data(), w_ukv + (static_cast<std::size_t>(hd) * d.kv_cols + d.nope) * d.kvl,
                               res.data(), rows, d.vd, d.kvl, false, true);
    copy_in(ctx.device(), res.data(), Columns{rows, 1, d.heads * d.vd, hd * d.vd, d.vd}, out);
  }
}

}  // namespace twinsim::exec
