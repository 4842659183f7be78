#pragma once
// The residual add that closes an attention or MLP block: y = x + branch + bias, the bias
// of the block's output projection broadcast over rows (Megatron's fused bias-dropout-add,
// without dropout). Named as a kernel so calibrate/ can time the executor's own code.
namespace twinsim::kernels::cpu {

// x, branch, y [rows, cols]; bias [cols] or nullptr.
void residual_forward(const float* x, const float* branch, const float* bias, float* y, int rows, int cols);

// The input gradients are dy itself (the caller passes it on); only dbias [cols] (+)= the
// column sums of dy is computed. accumulate adds across micro-batches.
void residual_backward(const float* dy, float* dbias, int rows, int cols, bool accumulate);

}  // namespace twinsim::kernels::cpu
