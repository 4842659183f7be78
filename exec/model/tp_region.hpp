#pragma once
// The communication at the edges of a tensor-parallel region (Shoeybi et al. 2019,
// Fig. 3: f is identity forward / all-reduce backward, g is all-reduce forward /
// identity backward; with sequence parallelism, Korthikanti et al. 2022 §4.2.2, Fig. 5:
// g becomes all-gather forward / reduce-scatter backward and g-bar the reverse).
// Activations are [tokens, hidden] row-major; SP shards the token rows in TP-rank order.
#include <cstddef>

#include "exec/model/tensor.hpp"
#include "exec/model/model_context.hpp"

namespace twinsim::exec {

// Megatron-core's global memory buffer (parallel_state.get_global_memory_buffer(), used by
// tensor_parallel/layers.py for the sequence-parallel all-gather of a linear layer's input
// in forward and again for its weight gradient in backward): one [tokens, width] buffer
// per rank, allocated on first use, grown if a larger gather comes, kept for the run and
// counted as `buffers`. One gather at a time uses it.
class GatherBuffer {
 public:
  // A buffer of at least `count` elements of T (reallocated when T changes).
  template <class T>
  T* get(std::size_t count);

 private:
  Tensor t_;
};

// The functions below work on tensors of the storage type T (float, kernels::bf16 or
// kernels::fp16); 16-bit partial sums are added in fp32 and rounded once per step.

// The all-gather of `local` into ctx's GatherBuffer, or into `fallback` when the context
// has none. The rows stay valid until the next gather into the buffer.
template <class T>
const T* gather_token_rows_to_buffer(const ModelContext& ctx, const T* local, std::size_t local_count,
                                     Tensor& fallback);

// [tokens/tp, width] on each rank -> [tokens, width] everywhere (all-gather).
template <class T>
Tensor gather_token_rows(const ModelContext& ctx, const T* local, std::size_t local_count, MemCategory category);
// Partial sums [tokens, width] -> this rank's reduced rows [tokens/tp, width] (reduce-scatter).
template <class T>
Tensor reduce_scatter_token_rows(const ModelContext& ctx, const T* full, std::size_t full_count,
                                 MemCategory category);
// Partial sums summed in place over the TP group (all-reduce).
template <class T>
void all_reduce_tp(const ModelContext& ctx, T* data, std::size_t count);
// The backward of a TP region's entry, where a block's input grad leaves it as partial
// sums [tokens, width] in `full`: f backward (all-reduce them in place), or with sequence
// parallelism g backward (reduce-scatter them into `local`, this rank's token rows, and
// release `full`). The reduced grad; `full` unchanged on one rank.
template <class T>
const T* tp_entry_backward(const ModelContext& ctx, bool sequence_parallel, Tensor& full, Tensor& local);

}  // namespace twinsim::exec
