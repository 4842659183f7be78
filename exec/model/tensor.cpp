#include "exec/model/tensor.hpp"

#include <algorithm>
#include <cstdint>

namespace twinsim::exec {

namespace {
TrackedAllocator* current_allocator = nullptr;
}

TrackedAllocator& model_allocator() {
  static TrackedAllocator process_default;
  return current_allocator ? *current_allocator : process_default;
}

void set_model_allocator(TrackedAllocator* alloc) { current_allocator = alloc; }

Tensor::Tensor(MemCategory category, std::size_t count) : Tensor(category, count, Fill::zeros) {}

Tensor::Tensor(MemCategory category, std::size_t count, Fill fill) {
  if (count > 0)
    buffer_ = TypedBuffer(model_allocator(), {static_cast<std::int64_t>(count)}, category,
                          std::string(category_name(category)), Dtype::fp32, fill);
}

Tensor Tensor::uninitialized(MemCategory category, std::size_t count) {
  return Tensor(category, count, Fill::uninitialized);
}

void Tensor::zero() {
  if (!empty()) std::fill_n(data(), size(), 0.0f);
}

}  // namespace twinsim::exec
