#include "exec/model/tp_region.hpp"

namespace twinsim::exec {

template <class T>
T* GatherBuffer::get(std::size_t count) {
  if (t_.size() < count || t_.dtype() != storage_dtype<T>()) {
    t_.release();  // the old one goes first: never two buffers at once
    t_ = Tensor::zeros_of<T>(MemCategory::buffers, count);
  }
  return t_.as<T>();
}

template <class T>
const T* gather_token_rows_to_buffer(const ModelContext& ctx, const T* local, std::size_t local_count,
                                     Tensor& fallback) {
  if (!ctx.gather_buffer) {
    fallback = gather_token_rows(ctx, local, local_count, MemCategory::buffers);
    return fallback.as<T>();
  }
  const int tp = ctx.tp_size();
  T* full = ctx.gather_buffer->get<T>(local_count * tp);
  if (tp == 1) ctx.device().copy_on_device(full, local, local_count * sizeof(T));
  else ctx.tp->all_gather(local, full, local_count);
  return full;
}

template <class T>
Tensor gather_token_rows(const ModelContext& ctx, const T* local, std::size_t local_count, MemCategory category) {
  const int tp = ctx.tp_size();
  Tensor full = Tensor::zeros_of<T>(category, local_count * tp);
  if (tp == 1) ctx.device().copy_on_device(full.as<T>(), local, local_count * sizeof(T));
  else ctx.tp->all_gather(local, full.as<T>(), local_count);
  return full;
}

template <class T>
Tensor reduce_scatter_token_rows(const ModelContext& ctx, const T* full, std::size_t full_count,
                                 MemCategory category) {
  const int tp = ctx.tp_size();
  Tensor local = Tensor::zeros_of<T>(category, full_count / tp);
  if (tp == 1) ctx.device().copy_on_device(local.as<T>(), full, full_count * sizeof(T));
  else ctx.tp->reduce_scatter(full, local.as<T>(), full_count / tp);
  return local;
}

template <class T>
void all_reduce_tp(const ModelContext& ctx, T* data, std::size_t count) {
  if (ctx.tp_size() > 1) ctx.tp->all_reduce(data, count);
}

template <class T>
const T* tp_entry_backward(const ModelContext& ctx, bool sequence_parallel, Tensor& full, Tensor& local) {
  if (ctx.tp_size() == 1) return full.as<T>();
  if (!sequence_parallel) {
    all_reduce_tp(ctx, full.as<T>(), full.size());
    return full.as<T>();
  }
  local = reduce_scatter_token_rows(ctx, full.as<T>(), full.size(), MemCategory::activations);
  full.release();
  return local.as<T>();
}

#define TWINSIM_TP_REGION(T)                                                                                  \
  template T* GatherBuffer::get<T>(std::size_t);                                                              \
  template const T* gather_token_rows_to_buffer<T>(const ModelContext&, const T*, std::size_t, Tensor&);      \
  template Tensor gather_token_rows<T>(const ModelContext&, const T*, std::size_t, MemCategory);              \
  template Tensor reduce_scatter_token_rows<T>(const ModelContext&, const T*, std::size_t, MemCategory);      \
  template void all_reduce_tp<T>(const ModelContext&, T*, std::size_t);                                       \
  template const T* tp_entry_backward<T>(const ModelContext&, bool, Tensor&, Tensor&);
TWINSIM_TP_REGION(float)
TWINSIM_TP_REGION(kernels::bf16)
TWINSIM_TP_REGION(kernels::fp16)
#undef TWINSIM_TP_REGION

}  // namespace twinsim::exec
