#pragma once
// The host's view of an array, for the steps still computed on the host (the vocabulary-
// parallel cross-entropy, MoE routing and combine, the optimizer's checks and casts, greedy
// sampling): the array itself where the host may read it (the CPU backend: no copy, no
// cost; host memory), else a host copy taken after the device's work so far
// (Backend::copy_to_host waits for it), written back by store() when the step changed it.
// What a GPU backend pays for it is the copies; a kernel of the table removes them.
#include <cstddef>
#include <type_traits>
#include <vector>

#include "exec/runtime/backend.hpp"

namespace twinsim::exec {

// T may be const: a view only read.
template <class T>
class HostView {
 public:
  HostView(Backend& device, T* data, std::size_t count) : device_(device), data_(data), count_(count) {
    if (data == nullptr || device.host_can_access_device() || !device.host_must_stage(data)) return;
    copy_.resize(count);
    device.copy_to_host(copy_.data(), data, count * sizeof(T));
  }
  T* get() { return copy_.empty() ? data_ : copy_.data(); }
  // Back to the device (nothing to do where get() was the array itself).
  void store() {
    static_assert(!std::is_const_v<T>, "a read-only view has nothing to store");
    if (!copy_.empty()) device_.copy_to_device(data_, copy_.data(), count_ * sizeof(T));
  }

 private:
  Backend& device_;
  T* data_;
  std::size_t count_;
  std::vector<std::remove_const_t<T>> copy_;
};

}  // namespace twinsim::exec
