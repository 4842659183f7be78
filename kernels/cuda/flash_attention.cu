// Tiled causal attention, forward and backward, after FlashAttention-2 (Dao 2023, Alg. 1
// and 2), written for clarity rather than peak speed (no tensor cores, fp32 throughout).
//
// Work split, the same in all three kernels: a block of 4 warps owns 8 "own" rows (query
// rows in the forward and dq kernels, key rows in the dk/dv kernel), 2 per warp, and walks
// over the other side in tiles of 32 rows staged in shared memory. Within a warp, lane j
// handles row j of the tile: it computes one score s_ij (a dot product over head_dim from
// shared memory), and the warp's shuffles combine the 32 lanes. Each lane keeps 4 columns
// (d = lane + 32 e) of the own row's accumulators in registers, so head_dim <= 128.
// Shared rows are padded to 129 floats: lane j reading row j, column d hits bank
// (j * 129 + d) mod 32, all different, so the column-wise reads have no bank conflicts.
#include <stdexcept>
#include <string>

#include "kernels/common/softmax_math.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/flash_attention.hpp"
#include "kernels/cuda/reduce.cuh"

namespace twinsim::kernels::cuda {
namespace {

constexpr int kTile = kWarp;                        // rows per staged tile, one per lane
constexpr int kWarpsPerBlock = 4;
constexpr int kRowsPerWarp = 2;
constexpr int kOwnRows = kWarpsPerBlock * kRowsPerWarp;  // own rows per block
constexpr int kCols = kFlashMaxHeadDim / kWarp;     // accumulator columns per lane
constexpr int kStride = kFlashMaxHeadDim + 1;       // padded shared row

struct Shape {
  int batch, seq, heads, kv_heads, dim, group;
  float scale;  // 1 / sqrt(head_dim) (Vaswani et al. 2017, Eq. 1)
};

// Copies `rows` rows of `dim` floats, `row_stride` apart in global memory, into padded
// shared rows; rows at or past `limit` are zero. All threads of the block take part.
__device__ void stage_rows(float (*dst)[kStride], const float* src, long row_stride, int first,
                           int rows, int limit, int dim) {
  for (int idx = threadIdx.x; idx < rows * dim; idx += blockDim.x) {
    int r = idx / dim, d = idx % dim;
    dst[r][d] = first + r < limit ? src[static_cast<long>(first + r) * row_stride + d] : 0.0f;
  }
}

__device__ float dot_shared(const float* a, const float* b, int dim) {
  float s = 0.0f;
  for (int d = 0; d < dim; ++d) s += a[d] * b[d];
  return s;
}

// --- forward: out = softmax(scale q k^T, causal) v, and the row logsumexp ---------------
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp)
flash_forward_kernel(const float* q, const float* k, const float* v, float* out, float* lse, Shape s) {
  __shared__ float q_s[kOwnRows][kStride];
  __shared__ float k_s[kTile][kStride];
  __shared__ float v_s[kTile][kStride];
  int b = blockIdx.z, h = blockIdx.y, kvh = h / s.group;
  int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  long q_stride = static_cast<long>(s.heads) * s.dim, kv_stride = static_cast<long>(s.kv_heads) * s.dim;
  const float* qh = q + static_cast<long>(b) * s.seq * q_stride + static_cast<long>(h) * s.dim;
  const float* kh = k + static_cast<long>(b) * s.seq * kv_stride + static_cast<long>(kvh) * s.dim;
  const float* vh = v + static_cast<long>(b) * s.seq * kv_stride + static_cast<long>(kvh) * s.dim;
  int row0 = blockIdx.x * kOwnRows;
  int last_row = min(row0 + kOwnRows, s.seq) - 1;

  stage_rows(q_s, qh, q_stride, row0, kOwnRows, s.seq, s.dim);
  OnlineSoftmax stats[kRowsPerWarp];
  float acc[kRowsPerWarp][kCols] = {};

  for (int tile0 = 0; tile0 <= last_row; tile0 += kTile) {  // causal: keys up to the last row
    __syncthreads();  // everyone is done with the previous tile (and q_s is staged)
    stage_rows(k_s, kh, kv_stride, tile0, kTile, s.seq, s.dim);
    stage_rows(v_s, vh, kv_stride, tile0, kTile, s.seq, s.dim);
    __syncthreads();
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      int local = warp * kRowsPerWarp + rr, i = row0 + local;
      if (i >= s.seq) continue;  // warp-uniform
      int j = tile0 + lane;
      float score = j <= i ? s.scale * dot_shared(q_s[local], k_s[lane], s.dim) : -INFINITY;
      float tile_max = warp_max(score);
      if (tile_max == -INFINITY) continue;  // the whole tile is after row i
      // Online softmax (FlashAttention-2, Alg. 1 lines 8-10): rescale what was summed
      // under the old max, add this tile's exp(s - new max).
      float new_max = fmaxf(stats[rr].max, tile_max);
      float p = j <= i ? expf(score - new_max) : 0.0f;
      float rescale = online_softmax_rescale(stats[rr].max, new_max);
      stats[rr].sum = stats[rr].sum * rescale + warp_sum(p);
      stats[rr].max = new_max;
      int keys = min(kTile, i - tile0 + 1);
      for (int e = 0; e < kCols; ++e) acc[rr][e] *= rescale;
      for (int jj = 0; jj < keys; ++jj) {
        float pj = __shfl_sync(0xffffffffu, p, jj);
        for (int e = 0; e < kCols; ++e) {
          int d = lane + kWarp * e;
          if (d < s.dim) acc[rr][e] += pj * v_s[jj][d];
        }
      }
    }
  }
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    int i = row0 + warp * kRowsPerWarp + rr;
    if (i >= s.seq) continue;
    float* out_row = out + static_cast<long>(b) * s.seq * q_stride + i * q_stride + static_cast<long>(h) * s.dim;
    for (int e = 0; e < kCols; ++e) {
      int d = lane + kWarp * e;
      if (d < s.dim) out_row[d] = acc[rr][e] / stats[rr].sum;  // Alg. 1 line 12
    }
    if (lane == 0) lse[(static_cast<long>(b) * s.heads + h) * s.seq + i] = online_softmax_logsumexp(stats[rr]);
  }
}

// --- backward, step 1: delta_i = rowsum(dO_i * O_i) (FlashAttention-2, Alg. 2 line 4) ---
__global__ void flash_delta_kernel(const float* out, const float* dout, float* delta, Shape s) {
  long rows = static_cast<long>(s.batch) * s.seq * s.heads;  // (b, i, h) rows of out
  long warps = static_cast<long>(gridDim.x) * blockDim.x / kWarp;
  int lane = threadIdx.x % kWarp;
  // one warp per row, grid-stride; whole warps leave together (blockDim is a multiple of 32)
  for (long row = (blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x) / kWarp; row < rows;
       row += warps) {
    const float* o = out + row * s.dim;
    const float* g = dout + row * s.dim;
    float sum = 0.0f;
    for (int d = lane; d < s.dim; d += kWarp) sum += o[d] * g[d];
    sum = warp_sum(sum);
    int h = static_cast<int>(row % s.heads);
    long bi = row / s.heads;
    int i = static_cast<int>(bi % s.seq), b = static_cast<int>(bi / s.seq);
    if (lane == 0) delta[(static_cast<long>(b) * s.heads + h) * s.seq + i] = sum;
  }
}

// --- backward, step 2: dQ_i = scale sum_j dS_ij k_j, dS = P (dP - delta), dP = dO V^T ----
// (FlashAttention-2, Alg. 2 lines 11-13 and 21, with the query rows as the outer loop so
// that each dq row has one owner and no atomics are needed.)
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp)
flash_dq_kernel(const float* q, const float* k, const float* v, const float* lse, const float* delta,
                const float* dout, float* dq, Shape s) {
  __shared__ float q_s[kOwnRows][kStride];
  __shared__ float do_s[kOwnRows][kStride];
  __shared__ float k_s[kTile][kStride];
  __shared__ float v_s[kTile][kStride];
  int b = blockIdx.z, h = blockIdx.y, kvh = h / s.group;
  int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  long q_stride = static_cast<long>(s.heads) * s.dim, kv_stride = static_cast<long>(s.kv_heads) * s.dim;
  long q_base = static_cast<long>(b) * s.seq * q_stride + static_cast<long>(h) * s.dim;
  long kv_base = static_cast<long>(b) * s.seq * kv_stride + static_cast<long>(kvh) * s.dim;
  long stat_base = (static_cast<long>(b) * s.heads + h) * s.seq;
  int row0 = blockIdx.x * kOwnRows;
  int last_row = min(row0 + kOwnRows, s.seq) - 1;

  stage_rows(q_s, q + q_base, q_stride, row0, kOwnRows, s.seq, s.dim);
  stage_rows(do_s, dout + q_base, q_stride, row0, kOwnRows, s.seq, s.dim);
  float acc[kRowsPerWarp][kCols] = {};

  for (int tile0 = 0; tile0 <= last_row; tile0 += kTile) {
    __syncthreads();
    stage_rows(k_s, k + kv_base, kv_stride, tile0, kTile, s.seq, s.dim);
    stage_rows(v_s, v + kv_base, kv_stride, tile0, kTile, s.seq, s.dim);
    __syncthreads();
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      int local = warp * kRowsPerWarp + rr, i = row0 + local;
      if (i >= s.seq || tile0 > i) continue;  // warp-uniform
      int j = tile0 + lane;
      float ds = 0.0f;
      if (j <= i) {
        // P recomputed from the saved logsumexp (Alg. 2 line 9).
        float p = expf(s.scale * dot_shared(q_s[local], k_s[lane], s.dim) - lse[stat_base + i]);
        float dp = dot_shared(do_s[local], v_s[lane], s.dim);
        ds = softmax_backward_element(p, dp, delta[stat_base + i]);
      }
      int keys = min(kTile, i - tile0 + 1);
      for (int jj = 0; jj < keys; ++jj) {
        float dsj = __shfl_sync(0xffffffffu, ds, jj);
        for (int e = 0; e < kCols; ++e) {
          int d = lane + kWarp * e;
          if (d < s.dim) acc[rr][e] += dsj * k_s[jj][d];
        }
      }
    }
  }
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    int i = row0 + warp * kRowsPerWarp + rr;
    if (i >= s.seq) continue;
    float* dq_row = dq + q_base + i * q_stride;
    for (int e = 0; e < kCols; ++e) {
      int d = lane + kWarp * e;
      if (d < s.dim) dq_row[d] = s.scale * acc[rr][e];
    }
  }
}

// --- backward, step 3: dV_j = sum_i P_ij dO_i, dK_j = scale sum_i dS_ij q_i -------------
// (Alg. 2 lines 16 and 22) with the key rows as the outer loop; GQA: the block also loops
// over the `group` query heads that share kv head kvh and sums their contributions, so
// dk and dv are written once, without atomics.
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp)
flash_dkdv_kernel(const float* q, const float* k, const float* v, const float* lse,
                  const float* delta, const float* dout, float* dk, float* dv, Shape s) {
  __shared__ float k_s[kOwnRows][kStride];
  __shared__ float v_s[kOwnRows][kStride];
  __shared__ float q_s[kTile][kStride];
  __shared__ float do_s[kTile][kStride];
  __shared__ float lse_s[kTile];
  __shared__ float delta_s[kTile];
  int b = blockIdx.z, kvh = blockIdx.y;
  int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  long q_stride = static_cast<long>(s.heads) * s.dim, kv_stride = static_cast<long>(s.kv_heads) * s.dim;
  long kv_base = static_cast<long>(b) * s.seq * kv_stride + static_cast<long>(kvh) * s.dim;
  int row0 = blockIdx.x * kOwnRows;

  stage_rows(k_s, k + kv_base, kv_stride, row0, kOwnRows, s.seq, s.dim);
  stage_rows(v_s, v + kv_base, kv_stride, row0, kOwnRows, s.seq, s.dim);
  float dk_acc[kRowsPerWarp][kCols] = {};
  float dv_acc[kRowsPerWarp][kCols] = {};

  for (int h = kvh * s.group; h < (kvh + 1) * s.group; ++h) {
    long q_base = static_cast<long>(b) * s.seq * q_stride + static_cast<long>(h) * s.dim;
    long stat_base = (static_cast<long>(b) * s.heads + h) * s.seq;
    // causal: only queries i >= row0 see these keys; start at the tile holding row0
    for (int tile0 = row0 - row0 % kTile; tile0 < s.seq; tile0 += kTile) {
      __syncthreads();
      stage_rows(q_s, q + q_base, q_stride, tile0, kTile, s.seq, s.dim);
      stage_rows(do_s, dout + q_base, q_stride, tile0, kTile, s.seq, s.dim);
      if (threadIdx.x < kTile) {
        int i = tile0 + threadIdx.x;
        lse_s[threadIdx.x] = i < s.seq ? lse[stat_base + i] : 0.0f;
        delta_s[threadIdx.x] = i < s.seq ? delta[stat_base + i] : 0.0f;
      }
      __syncthreads();
      for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        int local = warp * kRowsPerWarp + rr, j = row0 + local;
        if (j >= s.seq) continue;  // warp-uniform
        int i = tile0 + lane;
        float p = 0.0f, ds = 0.0f;
        if (i < s.seq && i >= j) {
          p = expf(s.scale * dot_shared(q_s[lane], k_s[local], s.dim) - lse_s[lane]);
          float dp = dot_shared(do_s[lane], v_s[local], s.dim);
          ds = softmax_backward_element(p, dp, delta_s[lane]);
        }
        for (int ii = 0; ii < kTile; ++ii) {
          float pi = __shfl_sync(0xffffffffu, p, ii);
          float dsi = __shfl_sync(0xffffffffu, ds, ii);
          for (int e = 0; e < kCols; ++e) {
            int d = lane + kWarp * e;
            if (d < s.dim) {
              dv_acc[rr][e] += pi * do_s[ii][d];
              dk_acc[rr][e] += dsi * q_s[ii][d];
            }
          }
        }
      }
    }
  }
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    int j = row0 + warp * kRowsPerWarp + rr;
    if (j >= s.seq) continue;
    long at = kv_base + j * kv_stride;
    for (int e = 0; e < kCols; ++e) {
      int d = lane + kWarp * e;
      if (d < s.dim) {
        dk[at + d] = s.scale * dk_acc[rr][e];
        dv[at + d] = dv_acc[rr][e];
      }
    }
  }
}

Shape checked_shape(const AttentionShape& a) {
  auto fail = [](const std::string& field, int value, const std::string& rule) {
    throw std::invalid_argument("flash attention (cuda): " + field + " = " + std::to_string(value) +
                                ": " + rule);
  };
  if (a.head_dim < 1 || a.head_dim > kFlashMaxHeadDim)
    fail("head_dim", a.head_dim, "must be in 1.." + std::to_string(kFlashMaxHeadDim));
  if (a.v_dim() != a.head_dim)
    fail("v_head_dim", a.v_head_dim, "must equal head_dim = " + std::to_string(a.head_dim) + " (the CUDA kernel)");
  if (a.kv_heads < 1 || a.heads % a.kv_heads != 0)
    fail("kv_heads", a.kv_heads, "must divide heads = " + std::to_string(a.heads));
  if (a.batch < 1 || a.batch > 65535) fail("batch", a.batch, "must be in 1..65535 (grid z)");
  if (a.heads > 65535) fail("heads", a.heads, "must be at most 65535 (grid y)");
  if (a.seq < 1) fail("seq", a.seq, "must be positive");
  return Shape{a.batch, a.seq, a.heads, a.kv_heads, a.head_dim, a.heads / a.kv_heads,
               1.0f / sqrtf(static_cast<float>(a.head_dim))};
}

}  // namespace

void flash_attention_forward(const float* q, const float* k, const float* v, float* out,
                             float* logsumexp, const AttentionShape& shape) {
  Shape s = checked_shape(shape);
  dim3 grid((s.seq + kOwnRows - 1) / kOwnRows, s.heads, s.batch);
  flash_forward_kernel<<<grid, kWarpsPerBlock * kWarp, 0, current_stream()>>>(q, k, v, out, logsumexp, s);
  CUDA_CHECK_LAUNCH();
}

void flash_attention_backward(const float* q, const float* k, const float* v, const float* out,
                              const float* logsumexp, const float* dout, float* dq, float* dk,
                              float* dv, const AttentionShape& shape) {
  Shape s = checked_shape(shape);
  cudaStream_t stream = current_stream();
  float* delta = nullptr;
  long rows = static_cast<long>(s.batch) * s.heads * s.seq;
  CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&delta), rows * sizeof(float), stream));
  constexpr int kDeltaThreads = 256;  // 8 rows (warps) per block
  flash_delta_kernel<<<grid_for(rows * kWarp, kDeltaThreads), kDeltaThreads, 0, stream>>>(out, dout, delta, s);
  CUDA_CHECK_LAUNCH();
  dim3 dq_grid((s.seq + kOwnRows - 1) / kOwnRows, s.heads, s.batch);
  flash_dq_kernel<<<dq_grid, kWarpsPerBlock * kWarp, 0, stream>>>(q, k, v, logsumexp, delta, dout, dq, s);
  CUDA_CHECK_LAUNCH();
  dim3 kv_grid((s.seq + kOwnRows - 1) / kOwnRows, s.kv_heads, s.batch);
  flash_dkdv_kernel<<<kv_grid, kWarpsPerBlock * kWarp, 0, stream>>>(q, k, v, logsumexp, delta, dout, dk, dv, s);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaFreeAsync(delta, stream));
}

}  // namespace twinsim::kernels::cuda
