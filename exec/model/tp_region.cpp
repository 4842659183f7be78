#include "exec/model/tp_region.hpp"

#include <algorithm>

namespace twinsim::exec {

float* GatherBuffer::get(std::size_t count) {
  if (t_.size() < count) {
    t_.release();  // the old one goes first: never two buffers at once
    t_ = Tensor(MemCategory::buffers, count);
  }
  return t_.data();
}

const float* gather_token_rows_to_buffer(const ModelContext& ctx, const float* local, std::size_t local_count,
                                         Tensor& fallback) {
  if (!ctx.gather_buffer) {
    fallback = gather_token_rows(ctx, local, local_count, MemCategory::buffers);
    return fallback.data();
  }
  const int tp = ctx.tp_size();
  float* full = ctx.gather_buffer->get(local_count * tp);
  if (tp == 1) std::copy_n(local, local_count, full);
  else ctx.tp->all_gather(local, full, local_count);
  return full;
}

Tensor gather_token_rows(const ModelContext& ctx, const float* local, std::size_t local_count,
                         MemCategory category) {
  const int tp = ctx.tp_size();
  Tensor full(category, local_count * tp);
  if (tp == 1) std::copy_n(local, local_count, full.data());
  else ctx.tp->all_gather(local, full.data(), local_count);
  return full;
}

Tensor reduce_scatter_token_rows(const ModelContext& ctx, const float* full, std::size_t full_count,
                                 MemCategory category) {
  const int tp = ctx.tp_size();
  Tensor local(category, full_count / tp);
  if (tp == 1) std::copy_n(full, full_count, local.data());
  else ctx.tp->reduce_scatter(full, local.data(), full_count / tp);
  return local;
}

void all_reduce_tp(const ModelContext& ctx, float* data, std::size_t count) {
  if (ctx.tp_size() > 1) ctx.tp->all_reduce(data, count);
}

}  // namespace twinsim::exec
