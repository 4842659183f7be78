#include "exec/train/data_parallel.hpp"

namespace twinsim::exec {

void all_reduce_sequence_parallel_grads(const ParamBlock& block, float* grads, Communicator& tp) {
  if (tp.size() == 1) return;
  for (const ParamSlot& slot : block.slots())
    if (slot.spec.sequence_parallel_grad) tp.all_reduce(grads + slot.offset, slot.count);
}

void all_reduce_tied_embedding_grads(float* grads, std::size_t count, Communicator& embedding) {
  if (embedding.size() > 1) embedding.all_reduce(grads, count);
}

}  // namespace twinsim::exec
