// attention.hpp's kernels. Each block owns one row: it writes the row's scores to global
// memory (the saved probs, or a scratch), turns them into probabilities with block
// reductions (reduce.cuh), then its threads take the output columns.
#include <cmath>

#include "kernels/common/softmax_math.hpp"
#include "kernels/cuda/attention.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/reduce.cuh"

namespace twinsim::kernels::cuda {
namespace {

constexpr int kThreads = 128;

__device__ float dot(const float* a, const float* b, int n) {
  float sum = 0.0f;
  for (int d = 0; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

// p[0, len) := softmax(p[0, len)) (Vaswani et al. 2017, Eq. 1), by the whole block.
__device__ void softmax_row(float* p, int len, float* scratch) {
  float top = -INFINITY;
  for (int t = threadIdx.x; t < len; t += blockDim.x) top = fmaxf(top, p[t]);
  top = block_max(top, scratch);
  float sum = 0.0f;
  for (int t = threadIdx.x; t < len; t += blockDim.x) sum += (p[t] = expf(p[t] - top));
  sum = block_sum(sum, scratch);
  for (int t = threadIdx.x; t < len; t += blockDim.x) p[t] /= sum;
  __syncthreads();  // every thread reads every p[t] next
}

// Block (b, h, i): query row i of head h.
__global__ void forward_kernel(const float* q, const float* k, const float* v, float* out, float* probs,
                               AttentionShape s, float scale) {
  __shared__ float scratch[kWarp];
  const int i = blockIdx.x % s.seq, h = (blockIdx.x / s.seq) % s.heads, b = blockIdx.x / (s.seq * s.heads);
  const int kvh = s.kv_head_of(h), vd = s.v_dim();
  const float* qi = q + s.q_offset(b, h) + i * s.q_row_stride();
  float* p = probs + (static_cast<long>(b * s.heads + h) * s.seq + i) * s.seq;
  for (int t = threadIdx.x; t < s.seq; t += blockDim.x)
    p[t] = t <= i ? scale * dot(qi, k + s.kv_offset(b, kvh) + t * s.kv_row_stride(), s.head_dim) : 0.0f;
  __syncthreads();
  softmax_row(p, i + 1, scratch);
  const float* vh = v + s.v_offset(b, kvh);
  for (int d = threadIdx.x; d < vd; d += blockDim.x) {
    float acc = 0.0f;
    for (int t = 0; t <= i; ++t) acc += p[t] * vh[t * s.v_row_stride() + d];
    out[s.out_offset(b, h) + i * s.out_row_stride() + d] = acc;
  }
}

// Block (b, h, i): dS row i = P * (dP - rowsum(P * dP)) (FlashAttention-2, Alg. 2 line 11)
// into ds, then dq row i = scale dS K.
__global__ void score_grad_kernel(const float* k, const float* v, const float* probs, const float* dout, float* ds,
                                  float* dq, AttentionShape s, float scale) {
  __shared__ float scratch[kWarp];
  const int i = blockIdx.x % s.seq, h = (blockIdx.x / s.seq) % s.heads, b = blockIdx.x / (s.seq * s.heads);
  const int kvh = s.kv_head_of(h), vd = s.v_dim();
  const long row = (static_cast<long>(b * s.heads + h) * s.seq + i) * s.seq;
  const float* dout_i = dout + s.out_offset(b, h) + i * s.out_row_stride();
  float row_dot = 0.0f;
  for (int t = threadIdx.x; t <= i; t += blockDim.x) {
    const float dp = dot(dout_i, v + s.v_offset(b, kvh) + t * s.v_row_stride(), vd);
    ds[row + t] = dp;
    row_dot += probs[row + t] * dp;
  }
  row_dot = block_sum(row_dot, scratch);
  for (int t = threadIdx.x; t < s.seq; t += blockDim.x)
    ds[row + t] = t <= i ? softmax_backward_element(probs[row + t], ds[row + t], row_dot) : 0.0f;
  __syncthreads();
  const float* kh = k + s.kv_offset(b, kvh);
  for (int d = threadIdx.x; d < s.head_dim; d += blockDim.x) {
    float acc = 0.0f;
    for (int t = 0; t <= i; ++t) acc += ds[row + t] * kh[t * s.kv_row_stride() + d];
    dq[s.q_offset(b, h) + i * s.q_row_stride() + d] = scale * acc;
  }
}

// Block (b, kv head, j): key row j; dk = scale dS^T Q and dv = P^T dO, summed over the
// query heads of the group and the query rows i >= j.
__global__ void key_grad_kernel(const float* q, const float* probs, const float* dout, const float* ds, float* dk,
                                float* dv, AttentionShape s, float scale) {
  const int j = blockIdx.x % s.seq, kvh = (blockIdx.x / s.seq) % s.kv_heads, b = blockIdx.x / (s.seq * s.kv_heads);
  const int vd = s.v_dim();
  for (int d = threadIdx.x; d < s.head_dim + vd; d += blockDim.x) {
    const bool is_k = d < s.head_dim;
    const int col = is_k ? d : d - s.head_dim;
    float acc = 0.0f;
    for (int h = kvh * s.group(); h < (kvh + 1) * s.group(); ++h) {
      const long rows = static_cast<long>(b * s.heads + h) * s.seq;
      const float* by_row = is_k ? q + s.q_offset(b, h) + col : dout + s.out_offset(b, h) + col;
      const long stride = is_k ? s.q_row_stride() : s.out_row_stride();
      const float* weight = is_k ? ds : probs;
      for (int i = j; i < s.seq; ++i) acc += weight[(rows + i) * s.seq + j] * by_row[i * stride];
    }
    if (is_k) dk[s.kv_offset(b, kvh) + j * s.kv_row_stride() + col] = scale * acc;
    else dv[s.v_offset(b, kvh) + j * s.v_row_stride() + col] = acc;
  }
}

// Block (b, j, head): new token j of sequence b at position cached + j.
__global__ void kv_cache_kernel(const float* q, const float* k_cache, const float* v_cache, float* out,
                                float* scores, KvCacheAttentionShape s, float scale, long v_stride) {
  __shared__ float scratch[kWarp];
  const int head = blockIdx.x % s.heads, j = (blockIdx.x / s.heads) % s.new_tokens;
  const int b = blockIdx.x / (s.heads * s.new_tokens);
  const int hd = s.head_dim, vd = s.v_dim(), kv_head = head / (s.heads / s.kv_heads), len = s.cached + j + 1;
  const long token = static_cast<long>(b) * s.new_tokens + j;
  const float* qv = q + token * s.heads * hd + static_cast<long>(head) * hd;
  float* p = scores + (token * s.heads + head) * (s.cached + s.new_tokens);
  const long kv_width = static_cast<long>(s.kv_heads) * hd;
  for (int t = threadIdx.x; t < len; t += blockDim.x)
    p[t] = dot(qv, k_cache + (static_cast<long>(b) * s.cache_rows + t) * kv_width + static_cast<long>(kv_head) * hd,
               hd) * scale;
  __syncthreads();
  softmax_row(p, len, scratch);
  for (int d = threadIdx.x; d < vd; d += blockDim.x) {
    float acc = 0.0f;
    for (int t = 0; t < len; ++t)
      acc += p[t] * v_cache[(static_cast<long>(b) * s.cache_rows + t) * v_stride + static_cast<long>(kv_head) * vd + d];
    out[token * s.heads * vd + static_cast<long>(head) * vd + d] = acc;
  }
}

float scale_of(int head_dim) { return 1.0f / sqrtf(static_cast<float>(head_dim)); }

}  // namespace

void attention_forward(const float* q, const float* k, const float* v, float* out, float* probs,
                       const AttentionShape& shape) {
  const int blocks = shape.batch * shape.heads * shape.seq;
  if (blocks == 0) return;
  forward_kernel<<<blocks, kThreads, 0, current_stream()>>>(q, k, v, out, probs, shape, scale_of(shape.head_dim));
  CUDA_CHECK_LAUNCH();
}

void attention_backward(const float* q, const float* k, const float* v, const float* probs, const float* dout,
                        float* dq, float* dk, float* dv, const AttentionShape& shape) {
  const int rows = shape.batch * shape.heads * shape.seq;
  if (rows == 0) return;
  cudaStream_t stream = current_stream();
  const float scale = scale_of(shape.head_dim);
  float* ds = nullptr;
  CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&ds), static_cast<size_t>(rows) * shape.seq * sizeof(float),
                             stream));
  score_grad_kernel<<<rows, kThreads, 0, stream>>>(k, v, probs, dout, ds, dq, shape, scale);
  CUDA_CHECK_LAUNCH();
  key_grad_kernel<<<shape.batch * shape.kv_heads * shape.seq, kThreads, 0, stream>>>(q, probs, dout, ds, dk, dv,
                                                                                     shape, scale);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaFreeAsync(ds, stream));
}

void kv_cache_attention_forward(const float* q, const float* k_cache, const float* v_cache, float* out,
                                const KvCacheAttentionShape& shape) {
  const int blocks = shape.batch * shape.new_tokens * shape.heads;
  if (blocks == 0) return;
  cudaStream_t stream = current_stream();
  const float scale = shape.scale > 0 ? shape.scale : scale_of(shape.head_dim);
  const long v_stride = shape.v_row_stride > 0 ? shape.v_row_stride : static_cast<long>(shape.kv_heads) * shape.v_dim();
  float* scores = nullptr;
  const size_t score_count = static_cast<size_t>(blocks) * (shape.cached + shape.new_tokens);
  CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&scores), score_count * sizeof(float), stream));
  kv_cache_kernel<<<blocks, kThreads, 0, stream>>>(q, k_cache, v_cache, out, scores, shape, scale, v_stride);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaFreeAsync(scores, stream));
}

}  // namespace twinsim::kernels::cuda
