#include "exec/train/data_parallel.hpp"

namespace twinsim::exec {

template <class T>
void all_reduce_sequence_parallel_grads(const ParamBlock& block, T* grads, Communicator& tp) {
  if (tp.size() == 1) return;
  for (const ParamSlot& slot : block.slots())
    if (slot.spec.sequence_parallel_grad && slot.spec.trainable) tp.all_reduce(grads + slot.offset, slot.count);
}

template <class T>
void all_reduce_tied_embedding_grads(T* grads, std::size_t count, Communicator& embedding) {
  if (embedding.size() > 1) embedding.all_reduce(grads, count);
}

#define TWINSIM_DATA_PARALLEL(T)                                                                   \
  template void all_reduce_sequence_parallel_grads<T>(const ParamBlock&, T*, Communicator&); \
  template void all_reduce_tied_embedding_grads<T>(T*, std::size_t, Communicator&);
TWINSIM_DATA_PARALLEL(float)
TWINSIM_DATA_PARALLEL(kernels::bf16)
TWINSIM_DATA_PARALLEL(kernels::fp16)
#undef TWINSIM_DATA_PARALLEL

}  // namespace twinsim::exec
