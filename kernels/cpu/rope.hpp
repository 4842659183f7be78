#pragma once
// Rotary position embedding on x [batch, seq, heads, head_dim] (head_dim even).
// Position of token s is pos_offset + s (pos_offset > 0 for decode steps or a
// context-parallel shard). Nothing is saved: the backward only needs the positions.

namespace twinsim::kernels::cpu {

void rope_forward(const float* x, float* y, int batch, int seq, int heads, int head_dim,
                  float theta, int pos_offset = 0);

// dx = R(-angle) dy: the rotation's transpose.
void rope_backward(const float* dy, float* dx, int batch, int seq, int heads, int head_dim,
                   float theta, int pos_offset = 0);

}  // namespace twinsim::kernels::cpu
