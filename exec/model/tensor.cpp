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

Tensor::Tensor(MemCategory category, std::size_t count) {
  if (count > 0)
    buffer_ = TypedBuffer(model_allocator(), {static_cast<std::int64_t>(count)}, category, std::string(category_name(category)));
}

void Tensor::zero() {
  if (!empty()) std::fill_n(data(), size(), 0.0f);
}

}  // namespace twinsim::exec
