#include "exec/cpu/cpu_backend.hpp"

#include <cstring>

namespace twinsim::exec {

std::unique_ptr<Allocator> CpuBackend::make_device_allocator(std::int64_t capacity_bytes) const {
  return std::make_unique<TrackedAllocator>(capacity_bytes);
}

std::unique_ptr<Allocator> CpuBackend::make_host_allocator() const { return std::make_unique<TrackedAllocator>(); }

void CpuBackend::copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) {
  if (bytes > 0) std::memcpy(device_dst, host_src, bytes);
}

void CpuBackend::copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) {
  if (bytes > 0) std::memcpy(host_dst, device_src, bytes);
}

void CpuBackend::copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) {
  if (bytes > 0) std::memmove(device_dst, device_src, bytes);
}

void CpuBackend::fill_on_device(void* device_dst, unsigned char value, std::size_t bytes) {
  if (bytes > 0) std::memset(device_dst, value, bytes);
}

}  // namespace twinsim::exec
