#pragma once
// LayerNorm (GPT) or RMSNorm (Llama) on [rows, hidden], with what its backward needs.
// x, y, gamma, beta and their grads are in the storage type T (float, kernels::bf16 or
// kernels::fp16); the per-row statistics stay fp32.
#include <type_traits>

#include "exec/model/model_context.hpp"
#include "exec/model/tensor.hpp"
#include "exec/model/transformer_config.hpp"

namespace twinsim::exec {

struct NormSaved {
  Tensor mean;  // LayerNorm only
  Tensor rstd;
};

// y = norm(x) gamma (+ beta); beta may be null.
template <class T>
void norm_forward(const ModelContext& ctx, const TransformerConfig& c, const T* x, const T* gamma,
                  const std::type_identity_t<T>* beta, T* y, NormSaved& saved, int rows);
// dx overwritten; dgamma/dbeta accumulate.
template <class T>
void norm_backward(const ModelContext& ctx, const TransformerConfig& c, const T* dy, const T* x, const T* gamma,
                   const NormSaved& saved, T* dx, T* dgamma, std::type_identity_t<T>* dbeta, int rows);

}  // namespace twinsim::exec
