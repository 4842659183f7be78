#include "exec/model/embedding.hpp"

#include <algorithm>

#include "exec/model/tp_region.hpp"
#include "models/op_names.hpp"

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

void Embedding::forward(const ModelContext& ctx, const int* tokens, Tensor& x, Pass pass) const {
  with_storage(c_.storage, [&]<class T>() { forward_t(ctx, tokens, x.as<T>(), pass); });
}

void Embedding::backward(const ModelContext& ctx, const int* tokens, const Tensor& dx) const {
  with_storage(c_.storage, [&]<class T>() { backward_t(ctx, tokens, dx.as<T>()); });
}

namespace {

// x += y in fp32, one rounding to T per element.
template <class T>
void add_row(T* x, const T* y, int n) {
  for (int j = 0; j < n; ++j) x[j] = kernels::from_float<T>(kernels::to_float(x[j]) + kernels::to_float(y[j]));
}

}  // namespace

template <class T>
void Embedding::forward_t(const ModelContext& ctx, const int* tokens, T* x, Pass pass) const {
  const int t = c_.tokens(), tl = c_.local_tokens(), h = c_.hidden();
  const int v0 = c_.vocab_start(), vl = c_.local_vocab();
  Tensor partial = Tensor::zeros_of<T>(MemCategory::activations, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(-1, op_names::kEmbeddingLookup, pass);
    const T* wte = word_.param<T>(0);
    for (int i = 0; i < t; ++i) {
      const int row = tokens[i] - v0;
      if (row >= 0 && row < vl) std::copy_n(wte + static_cast<std::size_t>(row) * h, h, partial.as<T>() + static_cast<std::size_t>(i) * h);
    }
  }
  const T* summed = partial.as<T>();
  Tensor reduced;
  if (ctx.tp_size() > 1) {
    auto op = ctx.op(-1, op_names::kEmbeddingReduce, pass);
    if (c_.sequence_parallel) {
      reduced = reduce_scatter_token_rows(ctx, partial.as<T>(), partial.size(), MemCategory::activations);
      summed = reduced.as<T>();
    } else {
      all_reduce_tp(ctx, partial.as<T>(), partial.size());
    }
  }
  auto op = ctx.op(-1, op_names::kEmbeddingPosition, pass);
  std::copy_n(summed, static_cast<std::size_t>(tl) * h, x);
  if (!position_) return;
  const int first = ctx.tp_size() > 1 ? first_local_token(ctx) : 0;
  const T* wpe = position_->param<T>(0);
  for (int r = 0; r < tl; ++r) {
    const T* pos_row = wpe + static_cast<std::size_t>((first + r) % c_.seq_len) * h;
    T* row = x + static_cast<std::size_t>(r) * h;
    add_row(row, pos_row, h);
  }
}

template <class T>
void Embedding::backward_t(const ModelContext& ctx, const int* tokens, const T* dx) const {
  const int t = c_.tokens(), tl = c_.local_tokens(), h = c_.hidden();
  const int v0 = c_.vocab_start(), vl = c_.local_vocab();
  if (position_) {
    auto op = ctx.op(-1, op_names::kEmbeddingPosition, Pass::bwd_dgrad);
    const int first = ctx.tp_size() > 1 ? first_local_token(ctx) : 0;
    T* dwpe = position_->grad<T>(0);
    for (int r = 0; r < tl; ++r) {
      T* pos_row = dwpe + static_cast<std::size_t>((first + r) % c_.seq_len) * h;
      const T* row = dx + static_cast<std::size_t>(r) * h;
      add_row(pos_row, row, h);
    }
  }
  const T* full = dx;
  Tensor gathered;
  if (c_.sequence_parallel && ctx.tp_size() > 1) {  // reduce-scatter's backward: all-gather
    auto op = ctx.op(-1, op_names::kEmbeddingReduce, Pass::bwd_dgrad);
    gathered = gather_token_rows(ctx, dx, static_cast<std::size_t>(tl) * h, MemCategory::activations);
    full = gathered.as<T>();
  }
  auto op = ctx.op(-1, op_names::kEmbeddingLookup, Pass::bwd_wgrad);
  T* dwte = word_.grad<T>(0);
  for (int i = 0; i < t; ++i) {
    const int row = tokens[i] - v0;
    if (row < 0 || row >= vl) continue;
    T* g = dwte + static_cast<std::size_t>(row) * h;
    const T* d = full + static_cast<std::size_t>(i) * h;
    add_row(g, d, h);
  }
}

}  // namespace twinsim::exec
