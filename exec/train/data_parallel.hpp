#pragma once
// Gradient sums outside the data-parallel reduction, done before it (sums commute, so the
// order does not change the result): Megatron-core's finalize_model_grads.
#include "exec/model/weights.hpp"
#include "exec/runtime/communicator.hpp"

namespace twinsim::exec {

// With sequence parallelism each TP rank saw only its token rows, so the grads of the
// replicated parameters (norms, biases outside the TP region, positions) are partial
// sums: all-reduce them over TP (Korthikanti et al. 2022 §4.2.2; Megatron
// _allreduce_layernorm_grads). `grads` is the block's full flat grad buffer.
// T: the grads' storage type (float, kernels::bf16 or kernels::fp16).
template <class T>
void all_reduce_sequence_parallel_grads(const ParamBlock& block, T* grads, Communicator& tp);

// A tied embedding with pp > 1 lives on the first stage (lookup) and the last (output
// layer); their grads are summed over the embedding group so both copies stay equal
// (Shoeybi et al. 2019 §3; Megatron _allreduce_word_embedding_grads).
template <class T>
void all_reduce_tied_embedding_grads(T* grads, std::size_t count, Communicator& embedding);

}  // namespace twinsim::exec
