#pragma once
// The residual add on the GPU: kernels/cpu/residual.hpp's forward on device pointers, for
// every storage type (its backward, the bias gradient, is column_sum of linear.hpp).
// Summed in float and rounded once, as the CPU kernel, so both give the same bits.
#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cuda {

// y = x + branch (+ bias [cols] broadcast over rows), x, branch, y [rows, cols]; y may
// alias x or branch. T is float, bf16 or fp16.
template <class T>
void residual_forward(const T* x, const T* branch, const T* bias, T* y, int rows, int cols);

}  // namespace twinsim::kernels::cuda
