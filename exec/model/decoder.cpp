#include "exec/model/decoder.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "exec/model/device_tokens.hpp"
#include "exec/model/host_view.hpp"
#include "exec/model/norm_op.hpp"
#include "exec/model/tp_region.hpp"
#include "models/op_names.hpp"

namespace twinsim::exec {

constexpr MemCategory kAct = MemCategory::activations;

namespace {

ParamBlock* find_block(TransformerStage& stage, const std::string& name) {
  for (ParamBlock* b : stage.blocks())
    if (b->name() == name) return b;
  return nullptr;
}

float* param_or_null(ParamBlock& b, const std::string& name) {
  for (std::size_t i = 0; i < b.slots().size(); ++i)
    if (b.slots()[i].spec.name == name) return b.param(static_cast<int>(i));
  return nullptr;
}

float* param(ParamBlock& b, const std::string& name) { return b.param(b.index_of(name)); }

}  // namespace

Decoder::Decoder(TransformerStage& stage, int batch, int max_len)
    : stage_(stage), step_(stage.config()), batch_(batch), max_len_(max_len) {
  const TransformerConfig& c = stage.config();
  if (!c.has_embedding || !c.has_head || c.first_layer != 0 || c.end_layer != static_cast<int>(c.model.layers))
    throw std::invalid_argument("Decoder: the stage must hold the whole model (plan.pp = 1)");
  if (c.learned_positions() && max_len > c.model.max_seq_len)
    throw std::invalid_argument("Decoder: prompt_len + output_len = " + std::to_string(max_len) +
                                " exceeds the model's learned positions, max_seq_len = " +
                                std::to_string(c.model.max_seq_len));
  step_.sequence_parallel = false;  // one token per sequence cannot be split over TP ranks
  step_.micro_batch = batch;
  word_ = find_block(stage, op_names::kEmbeddingWord);
  position_ = find_block(stage, op_names::kEmbeddingPosition);
  head_norm_ = find_block(stage, op_names::kHeadNorm);
  output_ = c.model.tied_embeddings ? word_ : find_block(stage, op_names::kHeadOutput);
  const std::size_t cache = static_cast<std::size_t>(batch) * max_len * c.local_kv_width();
  mlp_.reserve(c.end_layer);
  for (int l = 0; l < c.end_layer; ++l) {
    layers_.push_back(find_block(stage, "layer" + std::to_string(l)));
    mlp_.emplace_back(step_, l, *layers_.back());
    if (c.model.mla) {
      const std::size_t latent = c.model.mla->kv_lora_rank + c.model.mla->qk_rope_head_dim;
      latent_cache_.emplace_back(MemCategory::kv_cache, static_cast<std::size_t>(batch) * max_len * latent);
      continue;
    }
    k_cache_.emplace_back(MemCategory::kv_cache, cache);
    v_cache_.emplace_back(MemCategory::kv_cache, cache);
  }
}

namespace {

// Rows [0, n) of sequence 0 of `from` (which starts at row 0) into every sequence of `to`
// ([batch, to_len, width]).
void copy_prefix_rows(const Tensor& from, Tensor& to, int batch, int to_len, int n) {
  const std::size_t width = to.size() / (static_cast<std::size_t>(batch) * to_len);
  for (int b = 0; b < batch; ++b)
    current_backend().copy_on_device(to.data() + static_cast<std::size_t>(b) * to_len * width, from.data(),
                                     static_cast<std::size_t>(n) * width * sizeof(float));
}

}  // namespace

void Decoder::rewind(int n) {
  if (n < 0 || n > length_)
    throw std::invalid_argument("Decoder::rewind: position " + std::to_string(n) + " outside the cache's 0.." +
                                std::to_string(length_));
  length_ = n;
}

void Decoder::start_from_prefix(const Decoder& from, int n) {
  if (length_ != 0 || n < 1 || n > from.length_ || n > max_len_ || from.layers_.size() != layers_.size() ||
      &from.stage_ != &stage_)
    throw std::invalid_argument("Decoder: a prefix of " + std::to_string(n) + " tokens needs an empty cache and a "
                                "decoder of the same model holding them (it holds " + std::to_string(from.length_) + ")");
  for (std::size_t l = 0; l < k_cache_.size(); ++l) {
    copy_prefix_rows(from.k_cache_[l], k_cache_[l], batch_, max_len_, n);
    copy_prefix_rows(from.v_cache_[l], v_cache_[l], batch_, max_len_, n);
  }
  for (std::size_t l = 0; l < latent_cache_.size(); ++l)
    copy_prefix_rows(from.latent_cache_[l], latent_cache_[l], batch_, max_len_, n);
  length_ = n;
}

std::int64_t Decoder::kv_cache_bytes() const {
  std::int64_t n = 0;
  for (std::size_t l = 0; l < k_cache_.size(); ++l) n += 4 * static_cast<std::int64_t>(k_cache_[l].size() + v_cache_[l].size());
  for (const Tensor& t : latent_cache_) n += 4 * static_cast<std::int64_t>(t.size());
  return n;
}

// Vocab-parallel lookup (as Embedding::forward) plus the learned position of each token.
void Decoder::embed(const ModelContext& ctx, const int* tokens, int n, float* x) const {
  const int h = step_.hidden(), v0 = step_.vocab_start(), vl = step_.local_vocab(), rows = batch_ * n;
  {
    auto op = ctx.op(-1, op_names::kEmbeddingLookup, Pass::fwd);
    const DeviceTokens ids(ctx.device(), tokens, rows);
    ctx.kernels().vocab_embedding_forward(ids.get(), word_->param(0), x, rows, h, v0, vl);
  }
  if (ctx.tp_size() > 1) {
    auto op = ctx.op(-1, op_names::kEmbeddingReduce, Pass::fwd);
    all_reduce_tp(ctx, x, static_cast<std::size_t>(rows) * h);
  }
  if (!position_) return;
  auto op = ctx.op(-1, op_names::kEmbeddingPosition, Pass::fwd);
  const float* positions = position_->param(0) + static_cast<std::size_t>(length_) * h;  // positions length_ on
  for (int b = 0; b < batch_; ++b) {
    float* sequence = x + static_cast<std::size_t>(b) * n * h;
    ctx.kernels().residual_forward(sequence, positions, nullptr, sequence, n, h);
  }
}

// The n new queries of each sequence over its cache [0, length + n): the serving
// attention kernel (kernels/cpu/kv_cache_attention.hpp), which calibrate times too.
void Decoder::attend(const ModelContext& ctx, int i, const float* q, float* out, int n) const {
  KvCacheAttentionShape shape;
  shape.batch = batch_;
  shape.new_tokens = n;
  shape.cached = length_;
  shape.cache_rows = max_len_;
  shape.heads = step_.local_heads();
  shape.kv_heads = step_.local_kv_heads();
  shape.head_dim = step_.head_dim();
  ctx.kernels().kv_cache_attention_forward(q, k_cache_[i].data(), v_cache_[i].data(), out, shape);
}

Tensor Decoder::attention(const ModelContext& ctx, int i, const float* x, int n) {
  if (step_.model.mla) return mla_attention(ctx, i, x, n);
  ParamBlock& p = *layers_[i];
  const std::string pre = "layer" + std::to_string(i) + ".attn.";
  const int rows = batch_ * n, h = step_.hidden(), qw = step_.local_q_width(), kvw = step_.local_kv_width();
  Tensor normed = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * h),
         q = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * qw),
         kk = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * kvw),
         vv = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * kvw);
  {
    auto op = ctx.op(i, op_names::kAttnNorm, Pass::fwd);
    NormSaved saved;
    norm_forward(ctx, step_, x, param(p, pre + "norm.weight"), param_or_null(p, pre + "norm.bias"), normed.data(),
                 saved, rows);
  }
  {
    auto op = ctx.op(i, op_names::kAttnQkv, Pass::fwd);
    ctx.kernels().linear_forward(normed.data(), param(p, pre + "q.weight"), param_or_null(p, pre + "q.bias"),
                                 q.data(), rows, h, qw);
    ctx.kernels().linear_forward(normed.data(), param(p, pre + "k.weight"), param_or_null(p, pre + "k.bias"),
                                 kk.data(), rows, h, kvw);
    ctx.kernels().linear_forward(normed.data(), param(p, pre + "v.weight"), param_or_null(p, pre + "v.bias"),
                                 vv.data(), rows, h, kvw);
  }
  if (step_.model.position == Position::rope) {  // rotated at their absolute positions
    auto op = ctx.op(i, op_names::kAttnRope, Pass::fwd);
    ctx.kernels().rope_forward(q.data(), q.data(), batch_, n, step_.local_heads(), step_.head_dim(),
                               step_.rope_theta, length_);
    ctx.kernels().rope_forward(kk.data(), kk.data(), batch_, n, step_.local_kv_heads(), step_.head_dim(),
                               step_.rope_theta, length_);
  }
  Tensor out = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * qw);
  {
    auto op = ctx.op(i, op_names::kAttnCore, Pass::fwd);
    for (int b = 0; b < batch_; ++b) {  // the n new rows of sequence b after its `length_` cached ones
      const std::size_t src = static_cast<std::size_t>(b) * n * kvw;
      const std::size_t dst = (static_cast<std::size_t>(b) * max_len_ + length_) * kvw;
      const std::size_t bytes = static_cast<std::size_t>(n) * kvw * sizeof(float);
      ctx.device().copy_on_device(k_cache_[i].data() + dst, kk.data() + src, bytes);
      ctx.device().copy_on_device(v_cache_[i].data() + dst, vv.data() + src, bytes);
    }
    attend(ctx, i, q.data(), out.data(), n);
  }
  Tensor partial = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * h);
  {
    auto op = ctx.op(i, op_names::kAttnProj, Pass::fwd);
    ctx.kernels().linear_forward(out.data(), param(p, pre + "proj.weight"), nullptr, partial.data(), rows, qw, h);
  }
  if (ctx.tp_size() > 1) {
    auto op = ctx.op(i, op_names::kAttnTpExit, Pass::fwd);
    all_reduce_tp(ctx, partial.data(), partial.size());
  }
  // the attention's own tensors go when it returns, before the residual add's output
  q.release();
  kk.release();
  vv.release();
  out.release();
  Tensor y = Tensor::uninitialized(kAct, static_cast<std::size_t>(rows) * h);
  auto op = ctx.op(i, op_names::kAttnResidual, Pass::fwd);
  ctx.kernels().residual_forward(x, partial.data(), param_or_null(p, pre + "proj.bias"), y.data(), rows, h);
  return y;
}

Tensor Decoder::head(const ModelContext& ctx, const float* x, int n) const {
  const int h = step_.hidden(), vl = step_.local_vocab();
  Tensor last = Tensor::uninitialized(kAct, static_cast<std::size_t>(batch_) * h),
         normed = Tensor::uninitialized(kAct, static_cast<std::size_t>(batch_) * h);
  for (int b = 0; b < batch_; ++b)
    ctx.device().copy_on_device(last.data() + static_cast<std::size_t>(b) * h,
                                x + (static_cast<std::size_t>(b) * n + n - 1) * h, static_cast<std::size_t>(h) * sizeof(float));
  {
    auto op = ctx.op(-1, op_names::kHeadNorm, Pass::fwd);
    NormSaved saved;
    const float* beta = head_norm_->slots().size() > 1 ? head_norm_->param(1) : nullptr;
    norm_forward(ctx, step_, last.data(), head_norm_->param(0), beta, normed.data(), saved, batch_);
  }
  Tensor logits = Tensor::uninitialized(kAct, static_cast<std::size_t>(batch_) * vl);
  auto op = ctx.op(-1, op_names::kHeadLogits, Pass::fwd);
  ctx.kernels().linear_forward(normed.data(), output_->param(0), nullptr, logits.data(), batch_, h, vl);
  return logits;
}

Tensor Decoder::forward(const ModelContext& ctx, const int* tokens, int n) {
  if (n < 1 || length_ + n > max_len_)
    throw std::invalid_argument("Decoder: " + std::to_string(n) + " new tokens after " + std::to_string(length_) +
                                " exceed the cache of " + std::to_string(max_len_));
  step_.seq_len = n;
  Tensor x(kAct, static_cast<std::size_t>(batch_) * n * step_.hidden());
  embed(ctx, tokens, n, x.data());
  // Tensors live as in an eager no-grad forward (Megatron's or vLLM's layer loop): the
  // layer's input until the layer returns, the attention's output (the MLP's residual)
  // and its norm output through the MLP, which adds its branch into it in place.
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Tensor mid = attention(ctx, static_cast<int>(i), x.data(), n);
    FfnSaved saved;
    saved.for_backward = false;
    mlp_[i].forward(ctx, mid, mid, saved, Pass::fwd);
    x = std::move(mid);
  }
  Tensor logits = head(ctx, x.data(), n);
  length_ += n;
  return logits;
}

std::vector<int> greedy_tokens(const ModelContext& ctx, const float* logits, int batch, int local_vocab,
                               int vocab_start) {
  std::vector<int> out(batch);
  HostView<const float> host(ctx.device(), logits, static_cast<std::size_t>(batch) * local_vocab);
  for (int b = 0; b < batch; ++b) {
    const float* row = host.get() + static_cast<std::size_t>(b) * local_vocab;
    int best = 0;
    for (int v = 1; v < local_vocab; ++v)
      if (row[v] > row[best]) best = v;
    // the best of each shard as (logit, -token): the max over ranks is the global argmax
    float pair[2] = {row[best], -static_cast<float>(vocab_start + best)};
    if (ctx.tp_size() > 1) {
      float all_best = pair[0];
      ctx.tp->all_reduce(&all_best, 1, ReduceOp::max);
      pair[1] = pair[0] == all_best ? pair[1] : -INFINITY;
      ctx.tp->all_reduce(&pair[1], 1, ReduceOp::max);
    }
    out[b] = static_cast<int>(-pair[1]);
  }
  return out;
}

}  // namespace twinsim::exec
