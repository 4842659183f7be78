#include "exec/cuda/cuda_backend.hpp"

#include <cstring>
#include <stdexcept>

#include "exec/cuda/device_check.hpp"
#include "exec/cuda/nccl_communicator.hpp"
#include "kernels/cuda/check.hpp"

namespace twinsim::exec {

namespace {

// Page-locked host memory behind the shared accounting: ZeRO-Offload's states and
// checkpoint staging, which the GPU copies to and from without a bounce buffer.
class PinnedHostAllocator final : public Allocator {
 public:
  PinnedHostAllocator() : Allocator(0) {}
  ~PinnedHostAllocator() override { release_cache(); }

 protected:
  void* reserve_block(std::size_t bytes) override {
    void* p = nullptr;
    if (cudaMallocHost(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // not sticky; Allocator reports the failure with the category
      return nullptr;
    }
    return p;
  }
  void release_block(void* p, std::size_t) noexcept override { cudaFreeHost(p); }
  void fill_block(void* p, std::size_t bytes, unsigned char value) override { std::memset(p, value, bytes); }
};

}  // namespace

CudaBackend::CudaBackend() : kernels_(stream_), device_name_(require_cuda_device()) {}

std::unique_ptr<Allocator> CudaBackend::make_device_allocator(std::int64_t capacity_bytes) const {
  return std::make_unique<DeviceAllocator>(capacity_bytes);
}

std::unique_ptr<Allocator> CudaBackend::make_host_allocator() const { return std::make_unique<PinnedHostAllocator>(); }

// Pageable or pinned, the host side may be reused when these return: both wait.
void CudaBackend::copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) {
  if (bytes == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) {
  if (bytes > 0) CUDA_CHECK(cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::fill_on_device(void* device_dst, unsigned char value, std::size_t bytes) {
  if (bytes > 0) CUDA_CHECK(cudaMemsetAsync(device_dst, value, bytes, stream_));
}

void CudaBackend::synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

bool CudaBackend::host_must_stage(const void* p) const {
  cudaPointerAttributes attributes{};
  if (p == nullptr || cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice;
}

std::unique_ptr<Communicator> CudaBackend::device_communicator(Communicator& world) {
  std::unique_ptr<Communicator> same_ranks = world.split(0, world.rank());  // NCCL keeps its own MPI twin
  if (dynamic_cast<MpiCommunicator*>(same_ranks.get()) == nullptr)
    throw std::logic_error("the CUDA backend builds NCCL over an MPI world; this world is another communicator");
  return std::make_unique<NcclCommunicator>(
      std::unique_ptr<MpiCommunicator>(static_cast<MpiCommunicator*>(same_ranks.release())));
}

std::unique_ptr<CudaBackend> make_cuda_backend(const MpiCommunicator& world) {
  require_cuda_device();  // before select_local_device counts the GPUs
  select_local_device(world);
  return std::make_unique<CudaBackend>();
}

}  // namespace twinsim::exec
