#pragma once
// Conversions between the 16-bit storage types (kernels/common/storage.hpp) and fp32 on
// the GPU, element by element with the same rounding as the CPU (round to nearest, ties
// to even: to_bf16 / to_fp16 of storage.hpp, run on the device). The CUDA kernel table
// (exec/cuda/cuda_kernels.hpp) runs its fp32 element-wise kernels on 16-bit tensors
// between a widen and a narrow: a load converted to float and one rounding per store,
// the rule every CPU kernel follows.
#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cuda {

void widen(const bf16* src, float* dst, long n);
void widen(const fp16* src, float* dst, long n);
void narrow(const float* src, bf16* dst, long n);
void narrow(const float* src, fp16* dst, long n);

}  // namespace twinsim::kernels::cuda
