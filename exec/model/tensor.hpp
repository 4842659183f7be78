#pragma once
// The model's arrays: a runtime TypedBuffer (exec/runtime/typed_buffer.hpp) drawn from the
// rank's device Allocator with the report's memory category, under the short interface
// the model code wants (a category, a length and the storage type: float by default,
// kernels::bf16 / fp16 for mixed precision). Freeing early is `release()`.
#include <cstddef>

#include "exec/runtime/storage_dtype.hpp"
#include "exec/runtime/allocator.hpp"
#include "exec/runtime/typed_buffer.hpp"

namespace twinsim::exec {

// The allocator every Tensor of this process draws from (one MPI rank per process): the
// current backend's device memory (exec/runtime/backend.hpp) unless set.
Allocator& model_allocator();
// Points model_allocator() at `alloc` (nullptr: back to the backend's).
void set_model_allocator(Allocator* alloc);

// CPU memory beside the GPU's (ZeRO-Offload's optimizer states): counted apart, so it is
// neither in the GPU's peak nor bounded by its capacity. On the CPU executor both are the
// same DRAM; the accounting keeps them apart as a GPU run would.
Allocator& host_allocator();
void set_host_allocator(Allocator* alloc);

class Tensor {
 public:
  Tensor() = default;
  Tensor(MemCategory category, std::size_t count, Dtype dtype = Dtype::fp32);  // zero-filled (torch.zeros)
  // Not filled (torch.empty): for an op's output that its kernel writes in full.
  static Tensor uninitialized(MemCategory category, std::size_t count, Dtype dtype = Dtype::fp32);
  // The same in the storage type T (float, kernels::bf16, kernels::fp16).
  template <class T>
  static Tensor zeros_of(MemCategory category, std::size_t count) {
    return Tensor(category, count, storage_dtype<T>());
  }
  template <class T>
  static Tensor uninitialized_of(MemCategory category, std::size_t count) {
    return uninitialized(category, count, storage_dtype<T>());
  }

  // From host_allocator() instead of the model's (the GPU's).
  static Tensor on_host(MemCategory category, std::size_t count, Dtype dtype = Dtype::fp32, Fill fill = Fill::zeros);

  // Typed views (nullptr when empty); throw when the tensor holds another type.
  template <class T>
  T* as() {
    return empty() ? nullptr : buffer_.as<T>();
  }
  template <class T>
  const T* as() const {
    return empty() ? nullptr : buffer_.as<T>();
  }
  float* data() { return as<float>(); }
  const float* data() const { return as<float>(); }
  std::size_t size() const { return buffer_.numel(); }
  std::size_t bytes() const { return buffer_.bytes(); }
  Dtype dtype() const { return buffer_.dtype(); }
  bool empty() const { return buffer_.empty(); }
  float& operator[](std::size_t i) { return data()[i]; }
  float operator[](std::size_t i) const { return data()[i]; }
  void* raw() { return buffer_.raw(); }
  const void* raw() const { return buffer_.raw(); }
  void zero();
  void release() { buffer_ = TypedBuffer(); }
  // Host memory (on_host) rather than the device's.
  bool is_host() const { return on_host_; }

 private:
  Tensor(MemCategory category, std::size_t count, Dtype dtype, Fill fill);

  TypedBuffer buffer_;
  bool on_host_ = false;
};

}  // namespace twinsim::exec
