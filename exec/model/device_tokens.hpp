#pragma once
// Token ids on the device, for the lookup kernels (KernelTable::vocab_embedding_*): a copy
// of the host's ids (the data loader's, the sampler's), 4-byte ints in a buffer of 4-byte
// elements drawn from the model's allocator as activations.
#include <cstddef>

#include "exec/model/tensor.hpp"
#include "exec/runtime/backend.hpp"

namespace twinsim::exec {

class DeviceTokens {
 public:
  DeviceTokens(Backend& device, const int* tokens, int count)
      : ids_(Tensor::uninitialized(MemCategory::activations, static_cast<std::size_t>(count))) {
    static_assert(sizeof(int) == sizeof(float));
    device.copy_to_device(ids_.raw(), tokens, static_cast<std::size_t>(count) * sizeof(int));
  }
  const int* get() const { return static_cast<const int*>(ids_.raw()); }

 private:
  Tensor ids_;
};

}  // namespace twinsim::exec
