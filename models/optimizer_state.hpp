#pragma once
// Bytes of optimizer state and gradients a trainable parameter carries, one home for the
// simulator's memory model (sim/memory/weights: training_bytes_per_param) and the executor's (exec/train/zero.cpp
// allocates them, exec/train/memory_estimate counts them). A frozen parameter (training.lora's
// base) carries none.
#include <cstdint>
#include <stdexcept>

#include "models/checked_math.hpp"
#include "models/dtype.hpp"
#include "models/workload.hpp"

namespace twinsim {

// fp32 training: Adam's m and v (8), SGD's momentum (4). Mixed precision (16-bit, fp8 and fp4
// recipes): an fp32 master copy besides (Micikevicius et al. 2018 §3.1), 12 and 8 bytes, as the
// ZeRO paper counts them (Rajbhandari et al. 2020, §3.1).
inline std::int64_t optimizer_bytes_per_param(Dtype precision, Optimizer optimizer) {
  const std::int64_t moments = optimizer == Optimizer::adam ? 2 : 1;
  switch (precision) {
    case Dtype::fp32:
    case Dtype::tf32: return 4 * moments;
    case Dtype::fp16:
    case Dtype::bf16:
    case Dtype::fp8:
    case Dtype::nvfp4:
    case Dtype::mxfp4: return 4 * (moments + 1);
    default: throw std::invalid_argument("training.precision must be fp32, fp16, bf16, fp8, nvfp4 or mxfp4");
  }
}

// Bytes of the gradients one data-parallel rank keeps for `trainable` parameters, `element_bytes`
// each: a frozen parameter (training.lora's base) has none. All of them through ZeRO 1, its
// share of the `group` ranks from ZeRO 2 on (`sharded`; Rajbhandari et al. 2020 §5.2, P_os+g).
// One home for the simulator's memory report (sim/memory/weights.cpp zero_sharded) and the
// executor's gradient buffers.
inline std::int64_t gradient_bytes(std::int64_t trainable, std::int64_t element_bytes, bool sharded,
                                   std::int64_t group) {
  return checked_mul(sharded ? ceil_div(trainable, group) : trainable, element_bytes);
}

// Bytes one parameter's update moves: Adam reads and writes the fp32 (master) weights and its
// two moments (24), SGD the weights and its momentum (12), both read the gradient. One home for
// the simulator's optimizer op (sim/training/step_graph.cpp) and calibrate's adamw/sgd points.
inline double optimizer_update_bytes_per_param(Optimizer optimizer, double grad_element_bytes) {
  return (optimizer == Optimizer::adam ? 24.0 : 12.0) + grad_element_bytes;
}

// The same update as PyTorch's foreach AdamW runs it (torch/optim/adamw.py _multi_tensor_adamw,
// 2024), one pass a _foreach op over fp32 weights and moments: weight decay mul_ (read, write
// the weights: 8), lerp_ of the first moment to the gradient (8 + g), mul_ of the second (8),
// addcmul_ of the gradient squared into it (8 + g), sqrt into a new denominator (8), div_ and
// add_ of it (8 + 8), addcdiv_ of the weights (read them, the moment, the denominator; write:
// 16): 72 bytes and the gradient read twice.
inline double foreach_adamw_update_bytes_per_param(double grad_element_bytes) { return 72.0 + 2 * grad_element_bytes; }

}  // namespace twinsim
