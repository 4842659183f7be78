#pragma once
// The CUDA backend (exec/runtime/backend.hpp): kernels/cuda through CudaKernels on one
// stream, device memory from cudaMalloc behind the shared accounting (DeviceAllocator),
// pinned host memory beside it, copies with cudaMemcpyAsync on the stream, the end of a
// timed op a stream synchronize (so the profiler's host clock measures the kernels, not
// their launch), and NCCL over device buffers as the communicator of the job's groups.
//
// The stream is the legacy default stream: cudaMemset/cudaFree of the allocator and NCCL's
// "after the compute stream" ordering (nccl_communicator.hpp) then need nothing of their own.
#include <memory>
#include <string>

#include "exec/cpu/cpu_kernels.hpp"
#include "exec/cuda/cuda_kernels.hpp"
#include "exec/cuda/device_allocator.hpp"
#include "exec/runtime/backend.hpp"

namespace twinsim::exec {

class MpiCommunicator;

class CudaBackend final : public Backend {
 public:
  // Uses the current device (select_local_device picks it per rank). Throws
  // DeviceUnavailableError (device_check.hpp) when the process sees no GPU.
  CudaBackend();

  std::string_view name() const override { return "cuda"; }
  const KernelTable& kernels() const override { return kernels_; }
  const KernelTable& host_kernels() const override { return host_kernels_; }
  Allocator& device_allocator() override { return memory_; }
  std::unique_ptr<Allocator> make_device_allocator(std::int64_t capacity_bytes) const override;
  // Page-locked host memory (cudaMallocHost): what asynchronous copies need.
  std::unique_ptr<Allocator> make_host_allocator() const override;
  void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) override;
  void copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) override;
  void fill_on_device(void* device_dst, unsigned char value, std::size_t bytes) override;
  void synchronize() override;
  void end_timed_op() override { synchronize(); }
  bool host_can_access_device() const override { return false; }
  // Device memory: MPI (not CUDA-aware here) cannot read it.
  bool host_must_stage(const void* p) const override;
  // NCCL over the same ranks as world (an MPI communicator), on each rank's current GPU.
  std::unique_ptr<Communicator> device_communicator(Communicator& world) override;

  // "NVIDIA H100 80GB HBM3, sm_90" (the report names the device it ran on).
  const std::string& device_name() const { return device_name_; }

 private:
  cudaStream_t stream_ = nullptr;  // the legacy default stream
  CudaKernels kernels_;
  CpuKernels host_kernels_;
  DeviceAllocator memory_;
  std::string device_name_;
};

// The backend of this rank of `world` on a GPU node: picks the rank's GPU
// (select_local_device), then builds the backend on it. A collective.
std::unique_ptr<CudaBackend> make_cuda_backend(const MpiCommunicator& world);

}  // namespace twinsim::exec
