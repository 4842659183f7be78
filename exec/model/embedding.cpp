#include "exec/model/embedding.hpp"

#include <algorithm>

#include "exec/model/device_tokens.hpp"
#include "exec/model/lora_linear.hpp"
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

// rows[r] += table[(first + r) % period] for r < count, in fp32 with one rounding per
// element (the residual add): one kernel per run of consecutive table rows.
template <class T>
void add_periodic_rows(const ModelContext& ctx, T* rows, const T* table, int first, int count, int period, int width) {
  for (int r = 0; r < count;) {
    const int row = (first + r) % period, run = std::min(count - r, period - row);
    T* at = rows + static_cast<std::size_t>(r) * width;
    ctx.kernels().residual_forward(at, table + static_cast<std::size_t>(row) * width, nullptr, at, run, width);
    r += run;
  }
}

// table[(first + r) % period] += rows[r]: the same add the other way, the position table's gradient.
template <class T>
void add_into_periodic_rows(const ModelContext& ctx, T* table, const T* rows, int first, int count, int period,
                            int width) {
  for (int r = 0; r < count;) {
    const int row = (first + r) % period, run = std::min(count - r, period - row);
    T* at = table + static_cast<std::size_t>(row) * width;
    ctx.kernels().residual_forward(at, rows + static_cast<std::size_t>(r) * width, nullptr, at, run, width);
    r += run;
  }
}

}  // namespace

template <class T>
void Embedding::forward_t(const ModelContext& ctx, const int* tokens, T* x, Pass pass) const {
  const int t = c_.tokens(), tl = c_.local_tokens(), h = c_.hidden();
  Tensor partial = Tensor::uninitialized_of<T>(MemCategory::activations, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(-1, op_names::kEmbeddingLookup, pass);
    const DeviceTokens ids(ctx.device(), tokens, t);
    ctx.kernels().vocab_embedding_forward(ids.get(), word_.param<T>(0), partial.as<T>(), t, h, c_.vocab_start(),
                                          c_.local_vocab());
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
  ctx.device().copy_on_device(x, summed, static_cast<std::size_t>(tl) * h * sizeof(T));
  if (!position_) return;
  const int first = ctx.tp_size() > 1 ? first_local_token(ctx) : 0;
  add_periodic_rows(ctx, x, position_->param<T>(0), first, tl, c_.seq_len, h);
}

template <class T>
void Embedding::backward_t(const ModelContext& ctx, const int* tokens, const T* dx) const {
  if (!base_trains(c_)) return;  // LoRA: the embeddings are frozen (and one TP rank: no collective skipped)
  const int t = c_.tokens(), tl = c_.local_tokens(), h = c_.hidden();
  if (position_) {
    auto op = ctx.op(-1, op_names::kEmbeddingPosition, Pass::bwd_dgrad);
    const int first = ctx.tp_size() > 1 ? first_local_token(ctx) : 0;
    add_into_periodic_rows(ctx, position_->grad<T>(0), dx, first, tl, c_.seq_len, h);
  }
  const T* full = dx;
  Tensor gathered;
  if (c_.sequence_parallel && ctx.tp_size() > 1) {  // reduce-scatter's backward: all-gather
    auto op = ctx.op(-1, op_names::kEmbeddingReduce, Pass::bwd_dgrad);
    gathered = gather_token_rows(ctx, dx, static_cast<std::size_t>(tl) * h, MemCategory::activations);
    full = gathered.as<T>();
  }
  auto op = ctx.op(-1, op_names::kEmbeddingLookup, Pass::bwd_wgrad);
  const DeviceTokens ids(ctx.device(), tokens, t);
  ctx.kernels().vocab_embedding_backward(ids.get(), full, word_.grad<T>(0), t, h, c_.vocab_start(), c_.local_vocab());
}

}  // namespace twinsim::exec
