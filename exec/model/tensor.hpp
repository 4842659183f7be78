#pragma once
// The model's float32 arrays: a runtime Buffer (exec/runtime/typed_buffer.hpp) drawn from the
// rank's TrackedAllocator with the report's memory category, under the short interface
// the model code wants (a category and a length). Freeing early is `release()`.
#include <cstddef>

#include "exec/runtime/typed_buffer.hpp"
#include "exec/runtime/tracked_allocator.hpp"

namespace twinsim::exec {

// The allocator every Tensor of this process draws from (one MPI rank per process).
TrackedAllocator& model_allocator();
// Points model_allocator() at `alloc` (nullptr: back to the process default).
void set_model_allocator(TrackedAllocator* alloc);

class Tensor {
 public:
  Tensor() = default;
  Tensor(MemCategory category, std::size_t count);  // zero-filled (torch.zeros)
  // Not filled (torch.empty): for an op's output that its kernel writes in full.
  static Tensor uninitialized(MemCategory category, std::size_t count);
  float* data() { return empty() ? nullptr : buffer_.f32(); }
  const float* data() const { return empty() ? nullptr : buffer_.f32(); }
  std::size_t size() const { return buffer_.numel(); }
  bool empty() const { return buffer_.empty(); }
  float& operator[](std::size_t i) { return data()[i]; }
  float operator[](std::size_t i) const { return data()[i]; }
  void zero();
  void release() { buffer_ = TypedBuffer(); }

 private:
  Tensor(MemCategory category, std::size_t count, Fill fill);

  TypedBuffer buffer_;
};

}  // namespace twinsim::exec
