#pragma once
// Rotary position embedding on x [batch, seq, heads, head_dim] (head_dim even), stored as T
// (float, bf16 or fp16; common/storage.hpp), rotated in float and rounded once.
// Position of token s is pos_offset + s (pos_offset > 0 for decode steps or a
// context-parallel shard). Nothing is saved: the backward only needs the positions.
// In place (y == x, dx == dy) is allowed.
#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cpu {

template <class T>
void rope_forward(const T* x, T* y, int batch, int seq, int heads, int head_dim, float theta,
                  int pos_offset = 0);

// dx = R(-angle) dy: the rotation's transpose.
template <class T>
void rope_backward(const T* dy, T* dx, int batch, int seq, int heads, int head_dim, float theta,
                   int pos_offset = 0);

}  // namespace twinsim::kernels::cpu
