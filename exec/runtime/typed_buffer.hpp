#pragma once
// A named, shaped tensor owned through an Allocator: float32 storage, or 16-bit
// storage for bf16/fp16 (raw uint16 bit patterns), e.g. low-precision weight copies and
// checkpoint tensors. Freed when it goes out of scope; movable, not copyable.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "exec/runtime/storage_dtype.hpp"
#include "exec/runtime/allocator.hpp"
#include "models/dtype.hpp"

namespace twinsim::exec {

class TypedBuffer {
 public:
  TypedBuffer() = default;
  // dtype: fp32, bf16 or fp16; zero-filled unless `fill` says otherwise. Throws
  // AllocationError when it does not fit.
  TypedBuffer(Allocator& alloc, std::vector<std::int64_t> shape, MemCategory category,
         std::string name, Dtype dtype = Dtype::fp32, Fill fill = Fill::zeros);
  ~TypedBuffer();
  TypedBuffer(TypedBuffer&& other) noexcept;
  TypedBuffer& operator=(TypedBuffer&& other) noexcept;
  TypedBuffer(const TypedBuffer&) = delete;
  TypedBuffer& operator=(const TypedBuffer&) = delete;

  const std::string& name() const { return name_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  MemCategory category() const { return category_; }
  Dtype dtype() const { return dtype_; }
  std::size_t numel() const { return numel_; }
  std::size_t bytes() const { return numel_ * storage_bytes(dtype_); }
  bool empty() const { return data_ == nullptr; }

  // Typed views; throw std::logic_error when the storage type differs.
  float* f32();
  const float* f32() const;
  std::uint16_t* u16();
  const std::uint16_t* u16() const;
  std::span<float> f32_span() { return {f32(), numel_}; }
  std::span<const float> f32_span() const { return {f32(), numel_}; }
  // The storage type's view (float, kernels::bf16 or kernels::fp16); throws when the
  // buffer holds another type.
  template <class T>
  T* as() {
    check_holds(storage_dtype<T>());
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* as() const {
    return const_cast<TypedBuffer*>(this)->as<T>();
  }
  void* raw() { return data_; }
  const void* raw() const { return data_; }

 private:
  void release() noexcept;
  void check_holds(Dtype dtype) const;

  Allocator* alloc_ = nullptr;
  void* data_ = nullptr;
  std::vector<std::int64_t> shape_;
  std::size_t numel_ = 0;
  MemCategory category_ = MemCategory::buffers;
  Dtype dtype_ = Dtype::fp32;
  std::string name_;
};

}  // namespace twinsim::exec
