// widen / narrow of cast.hpp: one thread per element, storage.hpp's conversions.
#include "kernels/cuda/cast.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"

namespace twinsim::kernels::cuda {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void widen_kernel(const T* src, float* dst, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x)
    dst[i] = to_float(src[i]);
}

template <class T>
__global__ void narrow_kernel(const float* src, T* dst, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x)
    dst[i] = from_float<T>(src[i]);
}

template <class T>
void launch_widen(const T* src, float* dst, long n) {
  if (n <= 0) return;
  widen_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(src, dst, n);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_narrow(const float* src, T* dst, long n) {
  if (n <= 0) return;
  narrow_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(src, dst, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void widen(const bf16* src, float* dst, long n) { launch_widen(src, dst, n); }
void widen(const fp16* src, float* dst, long n) { launch_widen(src, dst, n); }
void narrow(const float* src, bf16* dst, long n) { launch_narrow(src, dst, n); }
void narrow(const float* src, fp16* dst, long n) { launch_narrow(src, dst, n); }

}  // namespace twinsim::kernels::cuda
