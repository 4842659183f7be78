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

}  // namespace

Tensor Decoder::mla_attention(const ModelContext& ctx, int i, const float* x, int n) {
  ParamBlock& p = *layers_[i];
  const std::string pre = "layer" + std::to_string(i) + ".attn.";
  const MlaSpec& a = *step_.model.mla;
  const int rows = batch_ * n, h = step_.hidden(), heads = step_.local_heads();
  const int nope = static_cast<int>(a.qk_nope_head_dim), rope = static_cast<int>(a.qk_rope_head_dim);
  const int qk = nope + rope, vd = static_cast<int>(a.v_head_dim), kvl = static_cast<int>(a.kv_lora_rank);
  const int lat = kvl + rope, ql = static_cast<int>(a.q_lora_rank), kv_cols = nope + vd;
  const float eps = step_.norm_eps;
  float* cache = latent_cache_[i].data();  // [batch, max_len, lat]
  const float* w_ukv = weight(p, pre + "kv_up.weight");  // per head: its nope rows, then its v rows
  Tensor normed = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * h);
  {
    auto op = ctx.op(i, op_names::kAttnNorm, Pass::fwd);
    NormSaved saved;
    norm_forward(ctx, step_, x, weight(p, pre + "norm.weight"), nullptr, normed.data(), saved, rows);
  }
  Tensor q = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * heads * qk);
  if (ql > 0) {
    Tensor latent_in = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * ql);
    {
      auto op = ctx.op(i, op_names::kAttnQDown, Pass::fwd);
      ctx.kernels().linear_forward(normed.data(), weight(p, pre + "q_down.weight"), nullptr, latent_in.data(), rows,
                                   h, ql);
    }
    Tensor latent = Tensor::uninitialized(kAct, latent_in.size()), rstd(kAct, static_cast<std::size_t>(rows));
    {
      auto op = ctx.op(i, op_names::kAttnQNorm, Pass::fwd);
      ctx.kernels().rmsnorm_forward(latent_in.data(), weight(p, pre + "q_norm.weight"), latent.data(), rstd.data(),
                                    rows, ql, eps);
    }
    latent_in.release();
    auto op = ctx.op(i, op_names::kAttnQUp, Pass::fwd);
    ctx.kernels().linear_forward(latent.data(), weight(p, pre + "q_up.weight"), nullptr, q.data(), rows, ql,
                                 heads * qk);
  } else {
    auto op = ctx.op(i, op_names::kAttnQ, Pass::fwd);
    ctx.kernels().linear_forward(normed.data(), weight(p, pre + "q.weight"), nullptr, q.data(), rows, h, heads * qk);
  }
  {  // the new rows' normed latent and rotated RoPE key, into the cache at their positions
    Tensor down = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * lat);
    {
      auto op = ctx.op(i, op_names::kAttnKvDown, Pass::fwd);
      ctx.kernels().linear_forward(normed.data(), weight(p, pre + "kv_down.weight"), nullptr, down.data(), rows, h,
                                   lat);
    }
    Tensor c = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * kvl);
    Tensor c_normed = Tensor::uninitialized(kAct, c.size()), rstd(kAct, static_cast<std::size_t>(rows));
    Tensor k_rope = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * rope);
    {
      auto op = ctx.op(i, op_names::kAttnKvNorm, Pass::fwd);
      copy_out(ctx.device(), down.data(), Columns{rows, 1, lat, 0, kvl}, c.data());
      ctx.kernels().rmsnorm_forward(c.data(), weight(p, pre + "kv_norm.weight"), c_normed.data(), rstd.data(), rows,
                                    kvl, eps);
    }
    auto op = ctx.op(i, op_names::kAttnRope, Pass::fwd);
    copy_out(ctx.device(), down.data(), Columns{rows, 1, lat, kvl, rope}, k_rope.data());
    ctx.kernels().rope_forward(k_rope.data(), k_rope.data(), batch_, n, 1, rope, step_.rope_theta, length_);
    for (int b = 0; b < batch_; ++b)
      for (int j = 0; j < n; ++j) {
        float* row = cache + (static_cast<std::size_t>(b) * max_len_ + length_ + j) * lat;
        const std::size_t r = static_cast<std::size_t>(b) * n + j;
        ctx.device().copy_on_device(row, c_normed.data() + r * kvl, kvl * sizeof(float));
        ctx.device().copy_on_device(row + kvl, k_rope.data() + r * rope, rope * sizeof(float));
      }
    const Columns q_rope_cols{rows, heads, qk, nope, rope};  // each head's rope part of Q
    Tensor q_rope = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * heads * rope);
    copy_out(ctx.device(), q.data(), q_rope_cols, q_rope.data());
    ctx.kernels().rope_forward(q_rope.data(), q_rope.data(), batch_, n, heads, rope, step_.rope_theta, length_);
    copy_in(ctx.device(), q_rope.data(), q_rope_cols, q.data());
  }
  Tensor out = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * heads * vd);
  const int len = length_ + n;
  if (n > 1) {  // prefill: K_nope and V per head rebuilt for every cached row, then attention
    Tensor kk = Tensor::uninitialized(kAct, static_cast<std::size_t>(batch_) * len * heads * qk);
    Tensor vv = Tensor::uninitialized(kAct, static_cast<std::size_t>(batch_) * len * heads * vd);
    {
      auto op = ctx.op(i, op_names::kAttnKvUp, Pass::fwd);
      Tensor c = Tensor::uninitialized(kAct, static_cast<std::size_t>(batch_) * len * kvl);
      for (int b = 0; b < batch_; ++b)
        copy_out(ctx.device(), cache + static_cast<std::size_t>(b) * max_len_ * lat, Columns{len, 1, lat, 0, kvl}, c.data() + static_cast<std::size_t>(b) * len * kvl);
      Tensor kv = Tensor::uninitialized(kAct, static_cast<std::size_t>(batch_) * len * heads * kv_cols);
      ctx.kernels().linear_forward(c.data(), w_ukv, nullptr, kv.data(), batch_ * len, kvl, heads * kv_cols);
      for (int b = 0; b < batch_; ++b)
        for (int t = 0; t < len; ++t) {
          const std::size_t r = static_cast<std::size_t>(b) * len + t;
          const float* k_rope = cache + (static_cast<std::size_t>(b) * max_len_ + t) * lat + kvl;
          for (int hd = 0; hd < heads; ++hd) {
            const float* from = kv.data() + (r * heads + hd) * kv_cols;
            float* key = kk.data() + (r * heads + hd) * qk;
            ctx.device().copy_on_device(key, from, nope * sizeof(float));
            ctx.device().copy_on_device(key + nope, k_rope, rope * sizeof(float));
            ctx.device().copy_on_device(vv.data() + (r * heads + hd) * vd, from + nope, vd * sizeof(float));
          }
        }
    }
    auto op = ctx.op(i, op_names::kAttnCore, Pass::fwd);
    KvCacheAttentionShape shape{batch_, n, length_, len, heads, heads, qk};
    shape.v_head_dim = vd;
    ctx.kernels().kv_cache_attention_forward(q.data(), kk.data(), vv.data(), out.data(), shape);
  } else {  // decode: W_UK absorbed into the query, W_UV applied to the latent output
    Tensor q_abs = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * heads * lat);
    Tensor part = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * std::max(nope, kvl));
    Tensor res = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * std::max(kvl, vd));
    {
      auto op = ctx.op(i, op_names::kAttnKvUp, Pass::fwd);
      for (int hd = 0; hd < heads; ++hd) {  // q_nope W_UK for head hd: [rows, nope] x [nope, kvl]
        copy_out(ctx.device(), q.data(), Columns{rows, 1, heads * qk, hd * qk, nope}, part.data());
        ctx.kernels().gemm_forward(part.data(), w_ukv + static_cast<std::size_t>(hd) * kv_cols * kvl, res.data(),
                                   rows, kvl, nope,
                        false, false);
        copy_in(ctx.device(), res.data(), Columns{rows, 1, heads * lat, hd * lat, kvl}, q_abs.data());
      }
      Tensor q_rope = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * heads * rope);
      copy_out(ctx.device(), q.data(), Columns{rows, heads, qk, nope, rope}, q_rope.data());  // the rope parts as they are
      copy_in(ctx.device(), q_rope.data(), Columns{rows, heads, lat, kvl, rope}, q_abs.data());
    }
    Tensor latent_out = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * heads * kvl);
    {
      auto op = ctx.op(i, op_names::kAttnCore, Pass::fwd);
      KvCacheAttentionShape shape{batch_, 1, length_, max_len_, heads, 1, lat};
      shape.v_head_dim = kvl;
      shape.v_row_stride = lat;
      shape.scale = 1.0f / std::sqrt(static_cast<float>(qk));  // the original head's width
      ctx.kernels().kv_cache_attention_forward(q_abs.data(), cache, cache, latent_out.data(), shape);
    }
    auto op = ctx.op(i, op_names::kAttnKvUp, Pass::fwd);
    for (int hd = 0; hd < heads; ++hd) {  // o_hd = latent_out_hd W_UV_hd^T: [rows, kvl] x [kvl, vd]
      copy_out(ctx.device(), latent_out.data(), Columns{rows, 1, heads * kvl, hd * kvl, kvl}, part.data());
      ctx.kernels().gemm_forward(part.data(), w_ukv + (static_cast<std::size_t>(hd) * kv_cols + nope) * kvl,
                                 res.data(), rows, vd,
                      kvl, false, true);
      copy_in(ctx.device(), res.data(), Columns{rows, 1, heads * vd, hd * vd, vd}, out.data());
    }
  }
  Tensor partial = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * h);
  {
    auto op = ctx.op(i, op_names::kAttnProj, Pass::fwd);
    ctx.kernels().linear_forward(out.data(), weight(p, pre + "proj.weight"), nullptr, partial.data(), rows,
                                 heads * vd, h);
  }
  if (ctx.tp_size() > 1) {
    auto op = ctx.op(i, op_names::kAttnTpExit, Pass::fwd);
    all_reduce_tp(ctx, partial.data(), partial.size());
  }
  q.release();
  out.release();
  Tensor y = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * h);
  auto op = ctx.op(i, op_names::kAttnResidual, Pass::fwd);
  ctx.kernels().residual_forward(x, partial.data(), nullptr, y.data(), rows, h);
  return y;
}

}  // namespace twinsim::exec
