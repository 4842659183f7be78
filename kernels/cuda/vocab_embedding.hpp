#pragma once
// Embedding lookup and its gradient on the GPU: the calls of kernels/cpu/vocab_embedding.hpp on
// device pointers (tokens too), for every storage type, with the same bits: the gradient
// adds token by token in order (one thread per column walks the tokens), so repeated
// tokens round as on the CPU and the result is deterministic, unlike atomics.
#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cuda {

template <class T>
void vocab_embedding_forward(const int* tokens, const T* table, T* out, int count, int dim, int row_start, int rows);
template <class T>
void vocab_embedding_backward(const int* tokens, const T* dout, T* dtable, int count, int dim, int row_start, int rows);

}  // namespace twinsim::kernels::cuda
