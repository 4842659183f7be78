#pragma once
// Token (+ optional learned position) embedding: out[b, s] = wte[token[b, s]] + wpe[s].

namespace twinsim::kernels::cpu {

// tokens [batch, seq]; wte [vocab, channels]; wpe [>= seq, channels] or nullptr (RoPE
// models have no position table); out [batch, seq, channels]. Saved input: tokens.
void embedding_forward(const int* tokens, const float* wte, const float* wpe, float* out,
                       int batch, int seq, int channels);

// dwte[token] += dout, dwpe[s] += dout. Always accumulates: the caller zeroes the grads
// once per step, and a tied embedding also receives the LM head's weight grad.
void embedding_backward(const float* dout, const int* tokens, float* dwte, float* dwpe, int batch,
                        int seq, int channels);

}  // namespace twinsim::kernels::cpu
