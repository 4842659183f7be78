#include "exec/cuda/device_allocator.hpp"

#include <cuda_runtime_api.h>

#include "kernels/cuda/check.hpp"

namespace twinsim::exec {
namespace {

// The bookkeeping of TrackedAllocator::allocate/deallocate, applied to device bytes, so
// both backends report memory the same way.
void account_allocate(MemoryStats& s, MemCategory category, std::int64_t bytes) {
  const auto c = static_cast<std::size_t>(category);
  s.current[c] += bytes;
  s.total_current += bytes;
  s.allocations += 1;
  if (s.current[c] > s.peak[c]) s.peak[c] = s.current[c];
  if (s.total_current > s.total_peak) {
    s.total_peak = s.total_current;
    s.at_total_peak = s.current;
  }
}

void account_free(MemoryStats& s, MemCategory category, std::int64_t bytes) {
  const auto c = static_cast<std::size_t>(category);
  s.current[c] -= bytes;
  s.total_current -= bytes;
}

}  // namespace

void* DeviceAllocator::allocate(std::size_t bytes, MemCategory category, std::string_view name) {
  const auto requested = static_cast<std::int64_t>(bytes);
  if (capacity_ > 0 && stats_.total_current + requested > capacity_)
    throw AllocationError(category, name, requested, stats_.total_current, capacity_);
  void* p = nullptr;
  if (bytes > 0) {
    cudaError_t status = cudaMalloc(&p, bytes);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // out of memory is not sticky: clear it and report it our way
      throw AllocationError(category, name, requested, stats_.total_current, 0);
    }
    CUDA_CHECK(status);
    CUDA_CHECK(cudaMemset(p, 0, bytes));
  }
  account_allocate(stats_, category, requested);
  return p;
}

void DeviceAllocator::deallocate(void* p, std::size_t bytes, MemCategory category) noexcept {
  if (p != nullptr) cudaFree(p);  // noexcept: a failure here cannot be acted on
  account_free(stats_, category, static_cast<std::int64_t>(bytes));
}

void DeviceAllocator::reset_peaks() {
  stats_.peak = stats_.current;
  stats_.total_peak = stats_.total_current;
  stats_.at_total_peak = stats_.current;
}

DeviceMemoryInfo device_memory_info() {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return {static_cast<std::int64_t>(free_bytes), static_cast<std::int64_t>(total_bytes)};
}

}  // namespace twinsim::exec
