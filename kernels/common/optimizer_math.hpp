#pragma once
// Per-parameter optimizer updates shared by the CPU and CUDA kernels.
#include <cmath>

#include "kernels/common/hd.hpp"

namespace twinsim::kernels {

// One AdamW step for one parameter (Loshchilov & Hutter 2019, Algorithm 2, lines 7-12):
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   m_hat = m / (1 - b1^t); v_hat = v / (1 - b2^t)
//   theta = theta - eta (alpha m_hat / (sqrt(v_hat) + eps) + lambda theta)
// with alpha = 1 and eta = lr, which is the torch.optim.AdamW convention (decay scaled by lr).
// bias1 = 1 - b1^t and bias2 = 1 - b2^t are computed once per step by the caller.
TWINSIM_HD inline void adamw_update(float* param, float grad, float* m, float* v, float lr,
                                    float beta1, float beta2, float eps, float weight_decay,
                                    float bias1, float bias2) {
  *m = beta1 * *m + (1.0f - beta1) * grad;
  *v = beta2 * *v + (1.0f - beta2) * grad * grad;
  float m_hat = *m / bias1;
  float v_hat = *v / bias2;
  *param -= lr * (m_hat / (sqrtf(v_hat) + eps) + weight_decay * *param);
}

// One SGD step, PyTorch convention (torch.optim.SGD, dampening 0, Sutskever et al. 2013
// momentum): g += wd * theta; buf = mu buf + g; theta -= lr buf. With buf starting at
// zero the first step gives buf = g, as PyTorch does. mu = 0 is plain SGD.
TWINSIM_HD inline void sgd_update(float* param, float grad, float* momentum_buf, float lr,
                                  float momentum, float weight_decay) {
  float g = grad + weight_decay * *param;
  if (momentum_buf != nullptr) {
    *momentum_buf = momentum * *momentum_buf + g;
    g = *momentum_buf;
  }
  *param -= lr * g;
}

// The settings of one optimizer step, the same for every backend's kernels.
struct AdamWConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;  // decoupled, scaled by lr (torch.optim.AdamW convention)
};

struct SgdConfig {
  float lr = 1e-2f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
};

}  // namespace twinsim::kernels
