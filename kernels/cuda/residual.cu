// One thread per element of residual.hpp's add.
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/residual.hpp"

namespace twinsim::kernels::cuda {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void residual_kernel(const T* x, const T* branch, const T* bias, T* y, int cols, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    // the CPU's order: (x + branch) + bias, one rounding
    const float b = bias != nullptr ? to_float(bias[i % cols]) : 0.0f;
    y[i] = from_float<T>(to_float(x[i]) + to_float(branch[i]) + b);
  }
}

}  // namespace

template <class T>
void residual_forward(const T* x, const T* branch, const T* bias, T* y, int rows, int cols) {
  const long n = static_cast<long>(rows) * cols;
  if (n == 0) return;
  residual_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(x, branch, bias, y, cols, n);
  CUDA_CHECK_LAUNCH();
}

template void residual_forward<float>(const float*, const float*, const float*, float*, int, int);
template void residual_forward<bf16>(const bf16*, const bf16*, const bf16*, bf16*, int, int);
template void residual_forward<fp16>(const fp16*, const fp16*, const fp16*, fp16*, int, int);

}  // namespace twinsim::kernels::cuda
