#include "exec/model/embedding.hpp"

#include <algorithm>

#include "exec/model/tp_region.hpp"

namespace twinsim::exec {

std::vector<ParamSpec> word_embedding_specs(const TransformerConfig& c) {
  return {{"embedding.word.weight", c.model.vocab, c.hidden(), Shard::rows, Init::normal, c.init_std, false, true}};
}

std::vector<ParamSpec> position_embedding_specs(const TransformerConfig& c) {
  if (!c.learned_positions()) return {};
  return {{"embedding.position.weight", c.model.max_seq_len, c.hidden(), Shard::none, Init::normal, c.init_std,
           c.sequence_parallel, true}};
}

Embedding::Embedding(const TransformerConfig& c, ParamBlock& word, ParamBlock* position)
    : c_(c), word_(word), position_(position) {}

int Embedding::first_local_token(const ModelContext& ctx) const {
  return c_.sequence_parallel ? ctx.tp->rank() * c_.local_tokens() : 0;
}

void Embedding::forward(const ModelContext& ctx, const int* tokens, float* x, Pass pass) const {
  const int t = c_.tokens(), tl = c_.local_tokens(), h = c_.hidden();
  const int v0 = c_.vocab_start(), vl = c_.local_vocab();
  Tensor partial(MemCategory::activations, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(-1, "embedding.lookup", pass);
    const float* wte = word_.param(0);
    for (int i = 0; i < t; ++i) {
      const int row = tokens[i] - v0;
      if (row >= 0 && row < vl) std::copy_n(wte + static_cast<std::size_t>(row) * h, h, partial.data() + static_cast<std::size_t>(i) * h);
    }
  }
  const float* summed = partial.data();
  Tensor reduced;
  if (ctx.tp_size() > 1) {
    auto op = ctx.op(-1, "embedding.reduce", pass);
    if (c_.sequence_parallel) {
      reduced = reduce_scatter_token_rows(ctx, partial.data(), partial.size(), MemCategory::activations);
      summed = reduced.data();
    } else {
      all_reduce_tp(ctx, partial.data(), partial.size());
    }
  }
  auto op = ctx.op(-1, "embedding.position", pass);
  std::copy_n(summed, static_cast<std::size_t>(tl) * h, x);
  if (!position_) return;
  const int first = ctx.tp_size() > 1 ? first_local_token(ctx) : 0;
  const float* wpe = position_->param(0);
  for (int r = 0; r < tl; ++r) {
    const float* pos_row = wpe + static_cast<std::size_t>((first + r) % c_.seq_len) * h;
    float* row = x + static_cast<std::size_t>(r) * h;
    for (int j = 0; j < h; ++j) row[j] += pos_row[j];
  }
}

void Embedding::backward(const ModelContext& ctx, const int* tokens, const float* dx) const {
  const int t = c_.tokens(), tl = c_.local_tokens(), h = c_.hidden();
  const int v0 = c_.vocab_start(), vl = c_.local_vocab();
  if (position_) {
    auto op = ctx.op(-1, "embedding.position", Pass::bwd_dgrad);
    const int first = ctx.tp_size() > 1 ? first_local_token(ctx) : 0;
    float* dwpe = position_->grad(0);
    for (int r = 0; r < tl; ++r) {
      float* pos_row = dwpe + static_cast<std::size_t>((first + r) % c_.seq_len) * h;
      const float* row = dx + static_cast<std::size_t>(r) * h;
      for (int j = 0; j < h; ++j) pos_row[j] += row[j];
    }
  }
  const float* full = dx;
  Tensor gathered;
  if (c_.sequence_parallel && ctx.tp_size() > 1) {  // reduce-scatter's backward: all-gather
    auto op = ctx.op(-1, "embedding.reduce", Pass::bwd_dgrad);
    gathered = gather_token_rows(ctx, dx, static_cast<std::size_t>(tl) * h, MemCategory::activations);
    full = gathered.data();
  }
  auto op = ctx.op(-1, "embedding.lookup", Pass::bwd_wgrad);
  float* dwte = word_.grad(0);
  for (int i = 0; i < t; ++i) {
    const int row = tokens[i] - v0;
    if (row < 0 || row >= vl) continue;
    float* g = dwte + static_cast<std::size_t>(row) * h;
    const float* d = full + static_cast<std::size_t>(i) * h;
    for (int j = 0; j < h; ++j) g[j] += d[j];
  }
}

}  // namespace twinsim::exec
