#pragma once
// Device memory for the executor on a GPU, with the same category-tagged accounting as
// the CPU's TrackedAllocator (exec/cpu/tracked_allocator.hpp): current and peak
// bytes per category, the peak of the total and the categories at that peak, and the
// same AllocationError when a request does not fit. It counts what it hands out; the
// CUDA context, cuBLAS workspaces and NCCL buffers live outside it (device_memory_info()
// shows the driver's view, which includes them).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "exec/cpu/tracked_allocator.hpp"

namespace twinsim::exec {

class DeviceAllocator {
 public:
  // capacity_bytes 0 = whatever the device has; otherwise the tracked total may not exceed
  // it (to emulate a smaller GPU on a bigger one).
  explicit DeviceAllocator(std::int64_t capacity_bytes = 0) : capacity_(capacity_bytes) {}
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // Device memory on the current device, zero-filled, 256-byte aligned (cudaMalloc).
  void* allocate(std::size_t bytes, MemCategory category, std::string_view name = {});
  // `bytes` and `category` must be those given to allocate().
  void deallocate(void* p, std::size_t bytes, MemCategory category) noexcept;

  const MemoryStats& stats() const { return stats_; }
  std::int64_t capacity_bytes() const { return capacity_; }
  void reset_peaks();

 private:
  std::int64_t capacity_;
  MemoryStats stats_;
};

// The driver's count for the current device (cudaMemGetInfo): everything, tracked or not.
struct DeviceMemoryInfo {
  std::int64_t free_bytes = 0;
  std::int64_t total_bytes = 0;
};
DeviceMemoryInfo device_memory_info();

}  // namespace twinsim::exec
