#include "exec/model/tensor.hpp"

#include <cstdint>
#include <cstring>

namespace twinsim::exec {

namespace {
TrackedAllocator* current_allocator = nullptr;
TrackedAllocator* current_host_allocator = nullptr;
}

TrackedAllocator& model_allocator() {
  static TrackedAllocator process_default;
  return current_allocator ? *current_allocator : process_default;
}

void set_model_allocator(TrackedAllocator* alloc) { current_allocator = alloc; }

TrackedAllocator& host_allocator() {
  static TrackedAllocator process_default;
  return current_host_allocator ? *current_host_allocator : process_default;
}

void set_host_allocator(TrackedAllocator* alloc) { current_host_allocator = alloc; }

Tensor Tensor::on_host(MemCategory category, std::size_t count, Dtype dtype, Fill fill) {
  Tensor t;
  if (count > 0)
    t.buffer_ = TypedBuffer(host_allocator(), {static_cast<std::int64_t>(count)}, category,
                            std::string(category_name(category)) + " (host)", dtype, fill);
  return t;
}

Tensor::Tensor(MemCategory category, std::size_t count, Dtype dtype) : Tensor(category, count, dtype, Fill::zeros) {}

Tensor::Tensor(MemCategory category, std::size_t count, Dtype dtype, Fill fill) {
  if (count > 0)
    buffer_ = TypedBuffer(model_allocator(), {static_cast<std::int64_t>(count)}, category,
                          std::string(category_name(category)), dtype, fill);
}

Tensor Tensor::uninitialized(MemCategory category, std::size_t count, Dtype dtype) {
  return Tensor(category, count, dtype, Fill::uninitialized);
}

void Tensor::zero() {
  if (!empty()) std::memset(raw(), 0, bytes());  // +0.0 is all zero bits in fp32, bf16 and fp16
}

}  // namespace twinsim::exec
