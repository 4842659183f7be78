#pragma once
// The executor's embedding lookup and its gradient: the rows of a (vocabulary-parallel)
// table picked by token ids (kernels/cpu/embedding.hpp is llm.c's token + position one). With tensor parallelism each rank holds rows [row_start, row_start + rows) of
// the vocabulary (Megatron-LM's VocabParallelEmbedding) and the ranks' partial lookups are
// summed after: a token outside the shard gets a zero row.
// Stored as T (float, bf16 or fp16; common/storage.hpp); the gradient is summed in float
// and rounded on each add, token by token in order, so every backend gives the same bits.
#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cpu {

// out[i, :] = table[tokens[i] - row_start, :] when that row is in the shard, else zeros.
// tokens [count], table [rows, dim], out [count, dim].
template <class T>
void vocab_embedding_forward(const int* tokens, const T* table, T* out, int count, int dim, int row_start, int rows);

// dtable[tokens[i] - row_start, :] += dout[i, :] for the tokens in the shard, i ascending.
template <class T>
void vocab_embedding_backward(const int* tokens, const T* dout, T* dtable, int count, int dim, int row_start, int rows);

}  // namespace twinsim::kernels::cpu
