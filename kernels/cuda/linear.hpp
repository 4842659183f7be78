#pragma once
// y = x W^T + b on the GPU: the same calls as kernels/cpu/linear.hpp, device pointers.
// The GEMMs go through cuBLAS (gemm.hpp); the bias add and its gradient are small kernels.

namespace twinsim::kernels::cuda {

void linear_forward(const float* x, const float* weight, const float* bias, float* y, int tokens,
                    int in, int out);
void linear_backward_input(const float* dy, const float* weight, float* dx, int tokens, int in,
                           int out);
void linear_backward_weight(const float* dy, const float* x, float* dweight, int tokens, int in,
                            int out, bool accumulate);
void linear_backward_bias(const float* dy, float* dbias, int tokens, int out, bool accumulate);

// y[r, c] += bias[c] over y [rows, cols].
void add_bias(float* y, const float* bias, int rows, int cols);
// out[c] (+)= sum over r of x[r, c]: the bias gradient of a [rows, cols] output grad.
void column_sum(const float* x, float* out, int rows, int cols, bool accumulate);

}  // namespace twinsim::kernels::cuda
