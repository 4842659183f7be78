#pragma once
// The memory-bound pass that casts a 16-bit operand to fp8 or a block-scaled fp4 type before
// a low-precision GEMM: one home for its bytes, used by training's layer costs
// (sim/training/layer_costs.cpp) and serving's (sim/inference/iteration_cost.cpp).
#include "models/dtype.hpp"

namespace twinsim {

// Bytes moved casting `elements` values of `from` to `to`: one read, `copies` low-precision
// copies written (each with its block scales, scaled_bytes), and for nvfp4 under
// `amax_pass` one more read for the tensor's amax, which its per-tensor fp32 scale needs before
// any block is scaled (Transformer Engine computes the amax, then casts; a served NVFP4
// checkpoint's activations carry a calibrated static scale instead: no such read).
double quantize_bytes(Dtype from, Dtype to, double elements, int copies, bool amax_pass);

}  // namespace twinsim
