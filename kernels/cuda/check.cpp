#include "kernels/cuda/check.hpp"

namespace twinsim::kernels::cuda {

std::string describe_failure(const char* call, const char* file, int line, const std::string& what,
                             const std::string& hint) {
  std::string msg = std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + what;
  if (!hint.empty()) msg += ". Hint: " + hint;
  return msg;
}

std::string cuda_error_hint(cudaError_t status) {
  switch (status) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
      return "no usable GPU: check nvidia-smi, the driver version and CUDA_VISIBLE_DEVICES";
    case cudaErrorMemoryAllocation:
      return "the device is full; lower the micro-batch, enable recompute or shard more (ZeRO)";
    case cudaErrorInvalidValue:
      return "a size or pointer argument is wrong (a host pointer where a device one is needed?)";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
      return "a kernel touched memory it does not own; rerun under compute-sanitizer";
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
      return "not built for this GPU; reconfigure with -DCMAKE_CUDA_ARCHITECTURES=<its sm>";
    case cudaErrorInvalidConfiguration:
      return "launch grid or block too large, or too much shared memory for this kernel";
    default:
      return "";
  }
}

std::string cublas_error_hint(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "cublasCreate failed: usually no GPU or no device memory left";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "cuBLAS could not allocate its workspace; the device is full";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "a size or leading dimension is negative or smaller than the matrix it describes";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "the GPU lacks the math unit (bf16 GEMM needs sm_80 or newer)";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "this combination of data types and compute type is not supported";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GEMM kernel faulted; check that A, B and C are device pointers of the right size";
    default:
      return "";
  }
}

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  std::string what = std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
  throw CudaError(describe_failure(call, file, line, what, cuda_error_hint(status)));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  std::string what = std::string(cublasGetStatusName(status)) + " (" + cublasGetStatusString(status) + ")";
  throw CudaError(describe_failure(call, file, line, what, cublas_error_hint(status)));
}

}  // namespace twinsim::kernels::cuda
