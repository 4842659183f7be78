#include "exec/model/transformer.hpp"

#include <cstring>
#include <limits>
#include "exec/model/lora_linear.hpp"
#include "models/op_names.hpp"

namespace twinsim::exec {

TransformerStage::TransformerStage(TransformerConfig config, int pad_multiple, int expert_pad_multiple)
    : c_(std::move(config)) {
  validate(c_);
  const int tp = c_.tp, r = c_.tp_rank;
  const Dtype st = c_.storage;
  if (c_.has_embedding) {
    word_ = std::make_unique<ParamBlock>(op_names::kEmbeddingWord, freeze_base(c_, word_embedding_specs(c_)), tp, r,
                                         pad_multiple, st);
    if (c_.learned_positions())
      position_ = std::make_unique<ParamBlock>(op_names::kEmbeddingPosition,
                                               freeze_base(c_, position_embedding_specs(c_)), tp, r, pad_multiple, st);
    embedding_ = std::make_unique<Embedding>(c_, *word_, position_.get());
  }
  for (int l = c_.first_layer; l < c_.end_layer; ++l) {
    std::vector<ParamSpec> specs = attention_param_specs(c_, l);
    for (ParamSpec& s : ffn_param_specs(c_, l)) specs.push_back(std::move(s));
    layer_params_.push_back(std::make_unique<ParamBlock>("layer" + std::to_string(l), freeze_base(c_, std::move(specs)),
                                                         tp, r, pad_multiple, st, expert_pad_multiple));
  }
  attention_.reserve(layer_params_.size());
  mlp_.reserve(layer_params_.size());
  for (std::size_t i = 0; i < layer_params_.size(); ++i) {
    attention_.emplace_back(c_, c_.first_layer + static_cast<int>(i), *layer_params_[i]);
    mlp_.emplace_back(c_, c_.first_layer + static_cast<int>(i), *layer_params_[i]);
  }
  if (c_.has_head) {
    head_norm_ = std::make_unique<ParamBlock>(op_names::kHeadNorm, freeze_base(c_, final_norm_specs(c_)), tp, r,
                                              pad_multiple, st);
    ParamBlock* out = word_.get();  // a tied model on one stage reads the embedding itself
    if (!c_.model.tied_embeddings || !c_.has_embedding) {
      output_ = std::make_unique<ParamBlock>(op_names::kHeadOutput, freeze_base(c_, output_layer_specs(c_)), tp, r,
                                             pad_multiple, st);
      out = output_.get();
    }
    head_ = std::make_unique<Head>(c_, *head_norm_, *out, 0);
  }
}

std::vector<BlockSpecs> stage_block_specs(const TransformerConfig& c) {
  std::vector<BlockSpecs> out;
  if (c.has_embedding) {
    out.push_back({op_names::kEmbeddingWord, freeze_base(c, word_embedding_specs(c))});
    if (c.learned_positions())
      out.push_back({op_names::kEmbeddingPosition, freeze_base(c, position_embedding_specs(c))});
  }
  for (int l = c.first_layer; l < c.end_layer; ++l) {
    std::vector<ParamSpec> specs = attention_param_specs(c, l);
    for (ParamSpec& s : ffn_param_specs(c, l)) specs.push_back(std::move(s));
    out.push_back({"layer" + std::to_string(l), freeze_base(c, std::move(specs))});
  }
  if (c.has_head) {
    out.push_back({op_names::kHeadNorm, freeze_base(c, final_norm_specs(c))});
    if (!c.model.tied_embeddings || !c.has_embedding)
      out.push_back({op_names::kHeadOutput, freeze_base(c, output_layer_specs(c))});
  }
  return out;
}

std::vector<ParamBlock*> TransformerStage::blocks() {
  std::vector<ParamBlock*> out;
  for (ParamBlock* b : {word_.get(), position_.get()})
    if (b) out.push_back(b);
  for (auto& b : layer_params_) out.push_back(b.get());
  for (ParamBlock* b : {head_norm_.get(), output_.get()})
    if (b) out.push_back(b);
  return out;
}

void TransformerStage::initialize() {
  for (ParamBlock* b : blocks()) b->initialize(c_.seed);
}

ParamBlock* TransformerStage::tied_embedding_block() {
  if (!c_.model.tied_embeddings) return nullptr;
  return word_ ? word_.get() : output_.get();
}

Tensor TransformerStage::layer_forward(const ModelContext& ctx, int i, Tensor x, LayerSaved& s, Pass pass) {
  const std::size_t n = x.size();
  s.input = std::move(x);
  s.mid = Tensor(MemCategory::activations, n, c_.storage);
  attention_[i].forward(ctx, s.input, s.mid, s.attn, pass);
  Tensor y(MemCategory::activations, n, c_.storage);
  mlp_[i].forward(ctx, s.mid, y, s.mlp, pass);
  if (pass == Pass::recompute) return y;
  if (c_.recompute == Recompute::full) {  // keep only the layer input (Chen et al. 2016; Korthikanti §5)
    s.attn.release_all();
    s.mlp.release_all();
    s.mid.release();
  } else if (c_.recompute == Recompute::selective) {
    attention_[i].drop_core_activations(s.attn);
  }
  return y;
}

Tensor TransformerStage::layer_backward(const ModelContext& ctx, int i, Tensor dy, LayerSaved& s) {
  if (c_.recompute == Recompute::full) layer_forward(ctx, i, std::move(s.input), s, Pass::recompute);
  Tensor dmid = mlp_[i].backward(ctx, dy, s.mid, s.mlp);
  dy.release();
  s.mid.release();
  Tensor dx = attention_[i].backward(ctx, dmid, s.input, s.attn);
  s.input.release();
  return dx;
}

namespace {

// A layer's saved tensors moved to CPU memory (host_allocator) or back into the model's: the
// copies a GPU runs on its copy engines, here one memcpy per tensor.
void move_saved(LayerSaved& s, bool to_host) {
  for (Tensor* t : s.tensors()) {
    if (t->empty()) continue;
    Tensor moved = to_host ? Tensor::on_host(MemCategory::activations, t->size(), t->dtype(), Fill::uninitialized)
                           : Tensor::uninitialized(MemCategory::activations, t->size(), t->dtype());
    std::memcpy(moved.raw(), t->raw(), t->bytes());
    *t = std::move(moved);
  }
  s.on_host = to_host;
}

}  // namespace

void TransformerStage::finish_offloads(const ModelContext& ctx, MicroBatchState& st, int before_layer) {
  std::vector<int> still;
  for (int layer : st.offloading) {
    if (layer > before_layer - 2) {
      still.push_back(layer);
      continue;
    }
    OpScope op(ctx.profiler, op_names::kOffloadActivationsToHost);
    move_saved(st.layers[static_cast<std::size_t>(layer)], true);
  }
  st.offloading = std::move(still);
}

void TransformerStage::reload(const ModelContext& ctx, MicroBatchState& st, int layer) {
  LayerSaved& s = st.layers[static_cast<std::size_t>(layer)];
  if (!s.on_host) return;
  OpScope op(ctx.profiler, op_names::kOffloadActivationsToGpu);
  move_saved(s, false);
}

ModelContext TransformerStage::context(const ModelContext& ctx) {
  ModelContext c = ctx;
  if (!c.gather_buffer) c.gather_buffer = &gather_buffer_;
  return c;
}

Tensor TransformerStage::forward(const ModelContext& outer, Tensor input, MicroBatchState& st) {
  const ModelContext ctx = context(outer);
  const std::size_t rows = static_cast<std::size_t>(c_.local_tokens()) * c_.hidden();
  Tensor x = std::move(input);
  if (embedding_) {
    acquire(word_.get(), false);
    acquire(position_.get(), false);
    x = Tensor(MemCategory::activations, rows, c_.storage);
    embedding_->forward(ctx, st.tokens.data(), x, Pass::fwd);
    release(position_.get(), false);
    release(word_.get(), false);
  }
  st.layers.resize(layer_params_.size());
  for (std::size_t i = 0; i < layer_params_.size(); ++i) {
    finish_offloads(ctx, st, static_cast<int>(i));
    acquire(layer_params_[i].get(), false);
    x = layer_forward(ctx, static_cast<int>(i), std::move(x), st.layers[i], Pass::fwd);
    release(layer_params_[i].get(), false);
    if (static_cast<int>(i) < c_.offload_layers) st.offloading.push_back(static_cast<int>(i));
  }
  if (!head_) {
    pass_done(false);
    return x;
  }
  ParamBlock* out = output_ ? output_.get() : word_.get();
  acquire(head_norm_.get(), false);
  acquire(out, false);
  st.head.input = std::move(x);
  st.loss = head_->forward(ctx, st.targets.data(), st.head, Pass::fwd);
  release(out, false);
  release(head_norm_.get(), false);
  pass_done(false);
  return {};
}

Tensor TransformerStage::backward(const ModelContext& outer, Tensor doutput, float dloss, MicroBatchState& st) {
  const ModelContext ctx = context(outer);
  Tensor dx = std::move(doutput);
  if (head_) {
    ParamBlock* out = output_ ? output_.get() : word_.get();
    acquire(head_norm_.get(), true);
    acquire(out, true);
    dx = head_->backward(ctx, st.targets.data(), dloss, st.head);
    release(out, true);
    release(head_norm_.get(), true);
  }
  finish_offloads(ctx, st, std::numeric_limits<int>::max());  // copies still in flight are done
  for (int i = static_cast<int>(layer_params_.size()) - 1; i >= 0; --i) {
    reload(ctx, st, i);
    if (i > 0) reload(ctx, st, i - 1);  // prefetched beside this layer's backward
    acquire(layer_params_[i].get(), true);
    dx = layer_backward(ctx, i, std::move(dx), st.layers[i]);
    release(layer_params_[i].get(), true);
  }
  st.layers.clear();
  if (!embedding_) {
    pass_done(true);
    return dx;
  }
  acquire(word_.get(), true);
  acquire(position_.get(), true);
  embedding_->backward(ctx, st.tokens.data(), dx);
  release(position_.get(), true);
  release(word_.get(), true);
  pass_done(true);
  return {};
}

}  // namespace twinsim::exec
