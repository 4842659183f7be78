// Element-wise activations and the bias kernels of linear.hpp. Each thread runs the
// per-element formula of kernels/common/activation_math.hpp, the one the CPU tests check.
#include "kernels/common/activation_math.hpp"
#include "kernels/cuda/activation.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/linear.hpp"

namespace twinsim::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// Grid-stride loop over n elements (one launch covers any n).
#define FOR_EACH_ELEMENT(i, n) \
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<long>(gridDim.x) * blockDim.x)

__global__ void gelu_forward_kernel(const float* x, float* y, long n) {
  FOR_EACH_ELEMENT(i, n) y[i] = gelu_tanh(x[i]);
}

__global__ void gelu_backward_kernel(const float* dy, const float* x, float* dx, long n) {
  FOR_EACH_ELEMENT(i, n) dx[i] = dy[i] * gelu_tanh_grad(x[i]);
}

__global__ void bias_gelu_forward_kernel(const float* x, const float* bias, float* y, int cols, long n) {
  FOR_EACH_ELEMENT(i, n) y[i] = gelu_tanh(x[i] + bias[i % cols]);
}

__global__ void bias_gelu_backward_kernel(const float* dy, const float* x, const float* bias,
                                          float* dx, int cols, long n) {
  FOR_EACH_ELEMENT(i, n) dx[i] = dy[i] * gelu_tanh_grad(x[i] + bias[i % cols]);
}

__global__ void swiglu_forward_kernel(const float* gate, const float* up, float* y, long n) {
  FOR_EACH_ELEMENT(i, n) y[i] = swiglu(gate[i], up[i]);
}

// d(silu(g) u)/dg = u silu'(g); d/du = silu(g). dgate/dup may alias dy (read first).
__global__ void swiglu_backward_kernel(const float* dy, const float* gate, const float* up,
                                       float* dgate, float* dup, long n) {
  FOR_EACH_ELEMENT(i, n) {
    float g = gate[i], u = up[i], d = dy[i];
    dgate[i] = d * u * silu_grad(g);
    dup[i] = d * silu(g);
  }
}

__global__ void add_bias_kernel(float* y, const float* bias, int cols, long n) {
  FOR_EACH_ELEMENT(i, n) y[i] += bias[i % cols];
}

// Column sums of x [rows, cols]: a block owns 32 columns; its 32 x 8 threads walk the rows
// 8 at a time (consecutive threads read consecutive columns, so loads coalesce), then the
// 8 partial sums per column are added in shared memory. Fixed order: deterministic.
constexpr int kSumRowsPerPass = 8;
__global__ void column_sum_kernel(const float* x, float* out, int rows, int cols, bool accumulate) {
  __shared__ float partial[kSumRowsPerPass][33];  // +1 column: no bank conflicts on the transpose
  int col = blockIdx.x * 32 + threadIdx.x;
  float sum = 0.0f;
  if (col < cols)
    for (int r = threadIdx.y; r < rows; r += kSumRowsPerPass) sum += x[static_cast<long>(r) * cols + col];
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float total = 0.0f;
    for (int j = 0; j < kSumRowsPerPass; ++j) total += partial[j][threadIdx.x];
    out[col] = accumulate ? out[col] + total : total;
  }
}

}  // namespace

void gelu_forward(const float* x, float* y, long n) {
  gelu_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(x, y, n);
  CUDA_CHECK_LAUNCH();
}

void gelu_backward(const float* dy, const float* x, float* dx, long n) {
  gelu_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(dy, x, dx, n);
  CUDA_CHECK_LAUNCH();
}

void bias_gelu_forward(const float* x, const float* bias, float* y, int rows, int cols) {
  long n = static_cast<long>(rows) * cols;
  bias_gelu_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(x, bias, y, cols, n);
  CUDA_CHECK_LAUNCH();
}

void bias_gelu_backward(const float* dy, const float* x, const float* bias, float* dx,
                        float* dbias, int rows, int cols, bool accumulate) {
  long n = static_cast<long>(rows) * cols;
  bias_gelu_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(dy, x, bias, dx,
                                                                                      cols, n);
  CUDA_CHECK_LAUNCH();
  if (dbias != nullptr) column_sum(dx, dbias, rows, cols, accumulate);
}

void swiglu_forward(const float* gate, const float* up, float* y, long n) {
  swiglu_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(gate, up, y, n);
  CUDA_CHECK_LAUNCH();
}

void swiglu_backward(const float* dy, const float* gate, const float* up, float* dgate,
                     float* dup, long n) {
  swiglu_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(dy, gate, up, dgate,
                                                                                   dup, n);
  CUDA_CHECK_LAUNCH();
}

void add_bias(float* y, const float* bias, int rows, int cols) {
  long n = static_cast<long>(rows) * cols;
  add_bias_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(y, bias, cols, n);
  CUDA_CHECK_LAUNCH();
}

void column_sum(const float* x, float* out, int rows, int cols, bool accumulate) {
  dim3 block(32, kSumRowsPerPass);
  column_sum_kernel<<<(cols + 31) / 32, block, 0, current_stream()>>>(x, out, rows, cols, accumulate);
  CUDA_CHECK_LAUNCH();
}

}  // namespace twinsim::kernels::cuda
