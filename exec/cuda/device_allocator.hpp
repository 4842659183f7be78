#pragma once
// Device memory for the executor on a GPU, with the same category-tagged accounting as
// every backend's (exec/runtime/allocator.hpp): current and peak bytes per category, the
// peak of the total and the categories at that peak, and the same AllocationError when a
// request does not fit. It counts what it hands out; the
// CUDA context, cuBLAS workspaces and NCCL buffers live outside it (device_memory_info()
// shows the driver's view, which includes them).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "exec/runtime/allocator.hpp"

namespace twinsim::exec {

// The Allocator (exec/runtime/allocator.hpp: the accounting and block cache every backend
// shares) over cudaMalloc'd blocks; a freed block stays cached for the next request of its
// size, as PyTorch's caching allocator keeps it (reserved, not allocated).
class DeviceAllocator final : public Allocator {
 public:
  // capacity_bytes 0 = whatever the device has; otherwise the tracked total may not exceed
  // it (to emulate a smaller GPU on a bigger one).
  explicit DeviceAllocator(std::int64_t capacity_bytes = 0) : Allocator(capacity_bytes) {}
  ~DeviceAllocator() override { release_cache(); }

 protected:
  // cudaMalloc on the current device (256-byte aligned); nullptr when it is out of memory
  void* reserve_block(std::size_t bytes) override;
  void release_block(void* p, std::size_t bytes) noexcept override;
  void fill_block(void* p, std::size_t bytes, unsigned char value) override;
};

// The driver's count for the current device (cudaMemGetInfo): everything, tracked or not.
struct DeviceMemoryInfo {
  std::int64_t free_bytes = 0;
  std::int64_t total_bytes = 0;
};
DeviceMemoryInfo device_memory_info();

}  // namespace twinsim::exec
