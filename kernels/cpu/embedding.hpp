#pragma once
// Token (+ optional learned position) embedding: out[b, s] = wte[token[b, s]] + wpe[s].
// Tables, out and the grads are stored as T (float, bf16 or fp16; common/storage.hpp);
// sums are float, rounded once per element per call.
#include <type_traits>

#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cpu {

// tokens [batch, seq]; wte [vocab, channels]; wpe [>= seq, channels] or nullptr (RoPE
// models have no position table); out [batch, seq, channels]. Saved input: tokens.
template <class T>
void embedding_forward(const int* tokens, const T* wte, const std::type_identity_t<T>* wpe, T* out,
                       int batch, int seq, int channels);

// dwte[token] += dout, dwpe[s] += dout. Always accumulates: the caller zeroes the grads
// once per step, and a tied embedding also receives the LM head's weight grad. dwpe may be
// nullptr. For 16-bit T each touched row is summed in float from its stored value and
// rounded once, however often its token occurs.
template <class T>
void embedding_backward(const T* dout, const int* tokens, T* dwte, std::type_identity_t<T>* dwpe,
                        int batch, int seq, int channels);

}  // namespace twinsim::kernels::cpu
