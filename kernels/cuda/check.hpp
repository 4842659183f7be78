#pragma once
// Error checks for CUDA runtime and cuBLAS calls. A failing call throws CudaError whose
// message names the call, file:line, the library's own error string and a hint at the
// usual cause, e.g.
//   cudaMalloc(&p, bytes) failed at exec/cuda/device_allocator.cpp:41: cudaErrorMemoryAllocation
//   (out of memory). Hint: the device is full; lower the micro-batch or enable recompute.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace twinsim::kernels::cuda {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "<call> failed at <file>:<line>: <what>. Hint: <hint>" (no hint part when hint is empty).
std::string describe_failure(const char* call, const char* file, int line, const std::string& what,
                             const std::string& hint);

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                     int line);

// Hints, public so tests can check that common failures get one.
std::string cuda_error_hint(cudaError_t status);
std::string cublas_error_hint(cublasStatus_t status);

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) throw_cuda_error(status, call, file, line);
}
inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, call, file, line);
}

}  // namespace twinsim::kernels::cuda

#define CUDA_CHECK(call) ::twinsim::kernels::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define CUBLAS_CHECK(call) ::twinsim::kernels::cuda::check_cublas((call), #call, __FILE__, __LINE__)
// After a <<<launch>>>: a bad launch configuration is reported at once by cudaGetLastError;
// faults inside the kernel surface at the next synchronizing call.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
