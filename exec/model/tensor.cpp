#include "exec/model/tensor.hpp"

#include <cstdint>
#include <cstring>
#include <memory>

#include "exec/runtime/backend.hpp"

namespace twinsim::exec {

namespace {
Allocator* current_allocator = nullptr;
Allocator* current_host_allocator = nullptr;
}

Allocator& model_allocator() { return current_allocator ? *current_allocator : current_backend().device_allocator(); }

void set_model_allocator(Allocator* alloc) { current_allocator = alloc; }

Allocator& host_allocator() {
  static const std::unique_ptr<Allocator> process_default = current_backend().make_host_allocator();
  return current_host_allocator ? *current_host_allocator : *process_default;
}

void set_host_allocator(Allocator* alloc) { current_host_allocator = alloc; }

Tensor Tensor::on_host(MemCategory category, std::size_t count, Dtype dtype, Fill fill) {
  Tensor t;
  if (count > 0)
    t.buffer_ = TypedBuffer(host_allocator(), {static_cast<std::int64_t>(count)}, category,
                            std::string(category_name(category)) + " (host)", dtype, fill);
  t.on_host_ = true;
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
  if (empty()) return;
  // +0.0 is all zero bits in fp32, bf16 and fp16
  if (on_host_) std::memset(raw(), 0, bytes());
  else current_backend().fill_on_device(raw(), 0, bytes());
}

}  // namespace twinsim::exec
