#pragma once
// Rotary position embedding on the GPU: the calls of kernels/cpu/rope.hpp on device
// pointers (x [batch, seq, heads, head_dim], rotate-half pairs, position pos_offset + s).

namespace twinsim::kernels::cuda {

void rope_forward(const float* x, float* y, int batch, int seq, int heads, int head_dim,
                  float theta, int pos_offset = 0);
void rope_backward(const float* dy, float* dx, int batch, int seq, int heads, int head_dim,
                   float theta, int pos_offset = 0);

}  // namespace twinsim::kernels::cuda
