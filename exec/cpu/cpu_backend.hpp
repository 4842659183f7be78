#pragma once
// The CPU backend (exec/runtime/backend.hpp): the kernels of kernels/cpu run on the calling
// thread, device memory is host memory (TrackedAllocator), copies are memcpy, and the host
// may read device memory directly. The build's default backend.
#include "exec/cpu/cpu_kernels.hpp"
#include "exec/runtime/backend.hpp"
#include "exec/cpu/tracked_allocator.hpp"

namespace twinsim::exec {

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  const KernelTable& kernels() const override { return kernels_; }
  const KernelTable& host_kernels() const override { return kernels_; }
  Allocator& device_allocator() override { return memory_; }
  std::unique_ptr<Allocator> make_device_allocator(std::int64_t capacity_bytes) const override;
  std::unique_ptr<Allocator> make_host_allocator() const override;
  void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) override;
  void copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) override;
  void fill_on_device(void* device_dst, unsigned char value, std::size_t bytes) override;
  void synchronize() override {}
  void end_timed_op() override {}
  bool host_can_access_device() const override { return true; }
  bool host_must_stage(const void*) const override { return false; }

 private:
  CpuKernels kernels_;
  TrackedAllocator memory_;
};

}  // namespace twinsim::exec
