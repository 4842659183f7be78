#pragma once
// Columns [first, first + width) of every one of `groups` column groups `stride` wide in
// each of `rows` rows: one head's slice of a [rows, heads, stride] tensor, or a tensor's own
// columns (groups 1). copy_out gathers them into a contiguous [rows, groups, width] buffer,
// copy_in writes them back. Latent attention splits and joins its heads' parts with them
// (mla_block.cpp, decoder_mla.cpp).
#include <algorithm>
#include <cstddef>

namespace twinsim::exec {

struct Columns {
  int rows, groups, stride, first, width;
  std::size_t at(int r, int g) const { return (static_cast<std::size_t>(r) * groups + g) * stride + first; }
  std::size_t packed(int r, int g) const { return (static_cast<std::size_t>(r) * groups + g) * width; }
};

template <class T>
void copy_out(const T* from, const Columns& c, T* to) {
  for (int r = 0; r < c.rows; ++r)
    for (int g = 0; g < c.groups; ++g) std::copy_n(from + c.at(r, g), c.width, to + c.packed(r, g));
}

template <class T>
void copy_in(const T* from, const Columns& c, T* to) {
  for (int r = 0; r < c.rows; ++r)
    for (int g = 0; g < c.groups; ++g) std::copy_n(from + c.packed(r, g), c.width, to + c.at(r, g));
}

}  // namespace twinsim::exec
