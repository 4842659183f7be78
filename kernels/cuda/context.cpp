#include "kernels/cuda/context.hpp"

#include "kernels/cuda/check.hpp"

namespace twinsim::kernels::cuda {
namespace {

thread_local cudaStream_t t_stream = nullptr;

// One cuBLAS handle per host thread (cuBLAS docs, "Thread Safety": a handle should not be
// shared by threads that use it concurrently).
struct CublasHandle {
  cublasHandle_t handle = nullptr;
  ~CublasHandle() {
    if (handle != nullptr) cublasDestroy(handle);  // at thread exit; errors can no longer be reported
  }
};
thread_local CublasHandle t_cublas;

}  // namespace

cudaStream_t current_stream() { return t_stream; }

void set_current_stream(cudaStream_t stream) { t_stream = stream; }

cublasHandle_t cublas_handle() {
  if (t_cublas.handle == nullptr) CUBLAS_CHECK(cublasCreate(&t_cublas.handle));
  CUBLAS_CHECK(cublasSetStream(t_cublas.handle, t_stream));
  return t_cublas.handle;
}

}  // namespace twinsim::kernels::cuda
