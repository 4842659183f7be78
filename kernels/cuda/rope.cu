// One thread per rotated pair (element p and p + head_dim/2 of one head of one token),
// running rope_angle and rope_rotate of kernels/common/rope_math.hpp.
#include "kernels/common/rope_math.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/rope.hpp"

namespace twinsim::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// direction +1 rotates forward, -1 applies the inverse rotation (the backward).
__global__ void rope_kernel(const float* in, float* out, int seq, int heads, int head_dim,
                            float theta, int pos_offset, float direction, long pairs) {
  int half = head_dim / 2;
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < pairs;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    int p = static_cast<int>(i % half);
    long token_head = i / half;             // (b * seq + s) * heads + h
    int s = static_cast<int>((token_head / heads) % seq);
    long base = token_head * head_dim;
    float angle = rope_angle(pos_offset + s, p, head_dim, theta);
    float c = cosf(angle), sn = direction * sinf(angle);
    rope_rotate(in[base + p], in[base + p + half], c, sn, &out[base + p], &out[base + p + half]);
  }
}

void rope(const float* in, float* out, int batch, int seq, int heads, int head_dim, float theta,
          int pos_offset, float direction) {
  long pairs = static_cast<long>(batch) * seq * heads * (head_dim / 2);
  rope_kernel<<<grid_for(pairs, kThreads), kThreads, 0, current_stream()>>>(
      in, out, seq, heads, head_dim, theta, pos_offset, direction, pairs);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void rope_forward(const float* x, float* y, int batch, int seq, int heads, int head_dim,
                  float theta, int pos_offset) {
  rope(x, y, batch, seq, heads, head_dim, theta, pos_offset, 1.0f);
}

void rope_backward(const float* dy, float* dx, int batch, int seq, int heads, int head_dim,
                   float theta, int pos_offset) {
  rope(dy, dx, batch, seq, heads, head_dim, theta, pos_offset, -1.0f);
}

}  // namespace twinsim::kernels::cuda
