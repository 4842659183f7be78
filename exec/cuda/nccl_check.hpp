#pragma once
// NCCL_CHECK(call): throws kernels::cuda::CudaError with the call, file:line, NCCL's error
// string and a hint, like CUDA_CHECK (kernels/cuda/check.hpp).
#include <nccl.h>

#include <string>

#include "kernels/cuda/check.hpp"

namespace twinsim::exec {

std::string nccl_error_hint(ncclResult_t status);
[[noreturn]] void throw_nccl_error(ncclResult_t status, const char* call, const char* file, int line);

inline void check_nccl(ncclResult_t status, const char* call, const char* file, int line) {
  if (status != ncclSuccess && status != ncclInProgress) throw_nccl_error(status, call, file, line);
}

}  // namespace twinsim::exec

#define NCCL_CHECK(call) ::twinsim::exec::check_nccl((call), #call, __FILE__, __LINE__)
