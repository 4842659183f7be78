#pragma once
// The residual add that closes an attention or MLP block: y = x + branch + bias, the bias
// of the block's output projection broadcast over rows (Megatron's fused bias-dropout-add,
// without dropout). Named as a kernel so calibrate/ can time the executor's own code.
// Every buffer is stored as T (float, bf16 or fp16; common/storage.hpp); sums are float.
#include <type_traits>

#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cpu {

// x, branch, y [rows, cols]; bias [cols] or nullptr. The three are summed in float and
// rounded once; y may alias x or branch.
template <class T>
void residual_forward(const T* x, const T* branch, const std::type_identity_t<T>* bias, T* y,
                      int rows, int cols);

// The input gradients are dy itself (the caller passes it on); only dbias [cols] (+)= the
// column sums of dy is computed, in float, rounded once per element. accumulate adds
// across micro-batches.
template <class T>
void residual_backward(const T* dy, T* dbias, int rows, int cols, bool accumulate);

}  // namespace twinsim::kernels::cpu
