#include "exec/runtime/typed_buffer.hpp"

#include <stdexcept>
#include <utility>

namespace twinsim::exec {

namespace {

std::size_t element_count(const std::vector<std::int64_t>& shape, const std::string& name) {
  std::size_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("tensor '" + name + "': negative dimension " + std::to_string(d));
    n *= static_cast<std::size_t>(d);
  }
  return n;
}

}  // namespace

TypedBuffer::TypedBuffer(Allocator& alloc, std::vector<std::int64_t> shape, MemCategory category,
                         std::string name, Dtype dtype, Fill fill)
    : alloc_(&alloc),
      shape_(std::move(shape)),
      numel_(element_count(shape_, name)),
      category_(category),
      dtype_(dtype),
      name_(std::move(name)) {
  data_ = alloc_->allocate(numel_ * storage_bytes(dtype_), category_, name_, fill);
}

TypedBuffer::~TypedBuffer() { release(); }

TypedBuffer::TypedBuffer(TypedBuffer&& other) noexcept
    : alloc_(std::exchange(other.alloc_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      shape_(std::move(other.shape_)),
      numel_(std::exchange(other.numel_, 0)),
      category_(other.category_),
      dtype_(other.dtype_),
      name_(std::move(other.name_)) {}

TypedBuffer& TypedBuffer::operator=(TypedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    alloc_ = std::exchange(other.alloc_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    shape_ = std::move(other.shape_);
    numel_ = std::exchange(other.numel_, 0);
    category_ = other.category_;
    dtype_ = other.dtype_;
    name_ = std::move(other.name_);
  }
  return *this;
}

void TypedBuffer::release() noexcept {
  if (alloc_) alloc_->deallocate(data_, numel_ * storage_bytes(dtype_), category_);
  alloc_ = nullptr;
  data_ = nullptr;
  numel_ = 0;
}

void TypedBuffer::check_holds(Dtype dtype) const {
  if (dtype_ != dtype)
    throw std::logic_error("tensor '" + name_ + "' holds " + std::string(to_string(dtype_)) + ", not " +
                           std::string(to_string(dtype)));
}

float* TypedBuffer::f32() { return as<float>(); }

const float* TypedBuffer::f32() const { return const_cast<TypedBuffer*>(this)->f32(); }

std::uint16_t* TypedBuffer::u16() {
  if (dtype_ != Dtype::bf16 && dtype_ != Dtype::fp16)
    throw std::logic_error("tensor '" + name_ + "' holds " + std::string(to_string(dtype_)) +
                           ", not a 16-bit type");
  return static_cast<std::uint16_t*>(data_);
}

const std::uint16_t* TypedBuffer::u16() const { return const_cast<TypedBuffer*>(this)->u16(); }

}  // namespace twinsim::exec
