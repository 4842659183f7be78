#include "exec/cuda/device_allocator.hpp"

#include <cuda_runtime_api.h>

#include "kernels/cuda/check.hpp"

namespace twinsim::exec {

void* DeviceAllocator::reserve_block(std::size_t bytes) {
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // out of memory is not sticky: clear it; Allocator reports it its way
    return nullptr;
  }
  CUDA_CHECK(status);
  return p;
}

void DeviceAllocator::release_block(void* p, std::size_t) noexcept {
  cudaFree(p);  // noexcept: a failure here cannot be acted on
}

void DeviceAllocator::fill_block(void* p, std::size_t bytes, unsigned char value) {
  CUDA_CHECK(cudaMemset(p, value, bytes));
}

DeviceMemoryInfo device_memory_info() {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return {static_cast<std::int64_t>(free_bytes), static_cast<std::int64_t>(total_bytes)};
}

}  // namespace twinsim::exec
