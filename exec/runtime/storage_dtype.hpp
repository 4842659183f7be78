#pragma once
// The element types the executor stores tensors in (kernels/common/storage.hpp) and the
// Dtype names the scenario uses for them: fp32 is float, bf16 and fp16 are 16-bit bit
// patterns the kernels convert to float around their math. with_storage runs a generic
// lambda for the C++ type of a run-time Dtype, so model code is written once over T.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/common/storage.hpp"
#include "models/dtype.hpp"

namespace twinsim::exec {

template <class T>
constexpr Dtype storage_dtype() {
  if constexpr (std::is_same_v<T, float>) return Dtype::fp32;
  else if constexpr (std::is_same_v<T, kernels::bf16>) return Dtype::bf16;
  else if constexpr (std::is_same_v<T, kernels::fp16>) return Dtype::fp16;
  else static_assert(!sizeof(T), "storage types are float, kernels::bf16 and kernels::fp16");
}

// Bytes of one stored element: 4 for fp32, 2 for bf16 / fp16; throws for any other dtype.
constexpr std::size_t storage_bytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp32: return 4;
    case Dtype::bf16:
    case Dtype::fp16: return 2;
    default:
      throw std::invalid_argument("storage dtype " + std::string(to_string(dtype)) + ": the executor stores fp32, bf16 or fp16");
  }
}

// f.template operator()<T>() for the storage type of `dtype`; throws for any other dtype.
template <class F>
decltype(auto) with_storage(Dtype dtype, F&& f) {
  switch (dtype) {
    case Dtype::fp32: return f.template operator()<float>();
    case Dtype::bf16: return f.template operator()<kernels::bf16>();
    case Dtype::fp16: return f.template operator()<kernels::fp16>();
    default:
      throw std::invalid_argument("storage dtype " + std::string(to_string(dtype)) + ": the executor stores fp32, bf16 or fp16");
  }
}

}  // namespace twinsim::exec
