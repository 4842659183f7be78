#pragma once
// Fully connected layer y = x W^T + b with W stored [out, in] (PyTorch nn.Linear layout).
// The backward is three separate ops because the simulator schedules the activation
// grad (on the critical path) apart from the weight grads (which can be deferred).
//
// T is the storage type of every tensor of one call: float, bf16 or fp16 (instantiated in
// linear.cpp). 16-bit calls compute in fp32 and round each output once (gemm.hpp), bias
// included, as torch.addmm's bf16 CUDA path does. bias/dbias are not deduced, so nullptr
// can be passed for them.
#include <type_traits>

#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cpu {

// x [tokens, in], weight [out, in], bias [out] or nullptr, y [tokens, out].
template <class T>
void linear_forward(const T* x, const T* weight, const std::type_identity_t<T>* bias, T* y,
                    int tokens, int in, int out);

// dx [tokens, in] = dy [tokens, out] W. Saved input: weight.
template <class T>
void linear_backward_input(const T* dy, const T* weight, T* dx, int tokens, int in, int out);

// dweight [out, in] (+)= dy^T x. Saved input: x. accumulate adds across micro-batches.
template <class T>
void linear_backward_weight(const T* dy, const T* x, T* dweight, int tokens, int in, int out,
                            bool accumulate);

// dbias [out] (+)= sum over tokens of dy, summed in fp32 (one rounding per element per call).
template <class T>
void linear_backward_bias(const T* dy, std::type_identity_t<T>* dbias, int tokens, int out,
                          bool accumulate);

}  // namespace twinsim::kernels::cpu
