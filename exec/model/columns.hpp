#pragma once
// Columns [first, first + width) of every one of `groups` column groups `stride` wide in
// each of `rows` rows: one head's slice of a [rows, heads, stride] tensor, or a tensor's own
// columns (groups 1). copy_out gathers them into a contiguous [rows, groups, width] buffer,
// copy_in writes them back. Latent attention splits and joins its heads' parts with them
// (mla_block.cpp, decoder_mla.cpp). Both are device-to-device copies of the backend, one
// per row and group (on the CPU backend a memmove each).
#include <cstddef>

#include "exec/runtime/backend.hpp"

namespace twinsim::exec {

struct Columns {
  int rows, groups, stride, first, width;
  std::size_t at(int r, int g) const { return (static_cast<std::size_t>(r) * groups + g) * stride + first; }
  std::size_t packed(int r, int g) const { return (static_cast<std::size_t>(r) * groups + g) * width; }
};

template <class T>
void copy_out(Backend& device, const T* from, const Columns& c, T* to) {
  const std::size_t bytes = static_cast<std::size_t>(c.width) * sizeof(T);
  for (int r = 0; r < c.rows; ++r)
    for (int g = 0; g < c.groups; ++g) device.copy_on_device(to + c.packed(r, g), from + c.at(r, g), bytes);
}

template <class T>
void copy_in(Backend& device, const T* from, const Columns& c, T* to) {
  const std::size_t bytes = static_cast<std::size_t>(c.width) * sizeof(T);
  for (int r = 0; r < c.rows; ++r)
    for (int g = 0; g < c.groups; ++g) device.copy_on_device(to + c.at(r, g), from + c.packed(r, g), bytes);
}

}  // namespace twinsim::exec
