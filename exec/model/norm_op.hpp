#pragma once
// LayerNorm (GPT) or RMSNorm (Llama) on [rows, hidden], with what its backward needs.
#include "exec/model/tensor.hpp"
#include "exec/model/transformer_config.hpp"

namespace twinsim::exec {

struct NormSaved {
  Tensor mean;  // LayerNorm only
  Tensor rstd;
};

// y = norm(x) gamma (+ beta); beta may be null.
void norm_forward(const TransformerConfig& c, const float* x, const float* gamma, const float* beta,
                  float* y, NormSaved& saved, int rows);
// dx overwritten; dgamma/dbeta accumulate.
void norm_backward(const TransformerConfig& c, const float* dy, const float* x, const float* gamma,
                   const NormSaved& saved, float* dx, float* dgamma, float* dbeta, int rows);

}  // namespace twinsim::exec
