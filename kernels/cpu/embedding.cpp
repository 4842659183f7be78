#include "kernels/cpu/embedding.hpp"

namespace twinsim::kernels::cpu {

void embedding_forward(const int* tokens, const float* wte, const float* wpe, float* out,
                       int batch, int seq, int channels) {
  for (int b = 0; b < batch; ++b)
    for (int s = 0; s < seq; ++s) {
      long bs = static_cast<long>(b) * seq + s;
      const float* tok = wte + static_cast<long>(tokens[bs]) * channels;
      const float* pos = wpe ? wpe + static_cast<long>(s) * channels : nullptr;
      float* o = out + bs * channels;
      for (int c = 0; c < channels; ++c) o[c] = tok[c] + (pos ? pos[c] : 0.0f);
    }
}

void embedding_backward(const float* dout, const int* tokens, float* dwte, float* dwpe, int batch,
                        int seq, int channels) {
  for (int b = 0; b < batch; ++b)
    for (int s = 0; s < seq; ++s) {
      long bs = static_cast<long>(b) * seq + s;
      const float* d = dout + bs * channels;
      float* tok = dwte + static_cast<long>(tokens[bs]) * channels;
      for (int c = 0; c < channels; ++c) tok[c] += d[c];
      if (dwpe == nullptr) continue;
      float* pos = dwpe + static_cast<long>(s) * channels;
      for (int c = 0; c < channels; ++c) pos[c] += d[c];
    }
}

}  // namespace twinsim::kernels::cpu
