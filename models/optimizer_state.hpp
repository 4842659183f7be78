#pragma once
// Bytes of optimizer state and gradients a trainable parameter carries, one home for the
// simulator's memory model (sim/memory/weights: training_bytes_per_param) and the executor's (exec/train/zero.cpp
// allocates them, exec/train/memory_estimate counts them). A frozen parameter (training.lora's
// base) carries none.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "models/checked_math.hpp"
#include "models/dtype.hpp"
#include "models/plan.hpp"
#include "models/workload.hpp"

namespace twinsim {

// The types Adam keeps its moments and fp32-training's weights / mixed precision's master
// weights in: fp32 all (the plain optimizer), or Megatron-core's precision-aware optimizer's
// (plan.exp_avg_dtype, exp_avg_sq_dtype, main_params_dtype). DeepSeek-V3 (arXiv:2412.19437
// §3.3.3) keeps bf16 moments and fp32 masters.
struct OptimizerStateDtypes {
  Dtype exp_avg = Dtype::fp32, exp_avg_sq = Dtype::fp32, main_params = Dtype::fp32;
  bool precision_aware() const {
    return exp_avg != Dtype::fp32 || exp_avg_sq != Dtype::fp32 || main_params != Dtype::fp32;
  }
};
inline OptimizerStateDtypes optimizer_state_dtypes(const PlanKnobs& plan) {
  return {plan.exp_avg_dtype, plan.exp_avg_sq_dtype, plan.main_params_dtype};
}
// The first of the precision-aware optimizer's keys set away from fp32, and its value, for a
// refusal's message (scenario/validate.cpp; the executor's, exec/train/train_config.cpp).
inline std::pair<std::string, std::string> precision_aware_key(const PlanKnobs& p) {
  if (p.exp_avg_dtype != Dtype::fp32) return {"plan.exp_avg_dtype", std::string(to_string(p.exp_avg_dtype))};
  if (p.exp_avg_sq_dtype != Dtype::fp32) return {"plan.exp_avg_sq_dtype", std::string(to_string(p.exp_avg_sq_dtype))};
  return {"plan.main_params_dtype", std::string(to_string(p.main_params_dtype))};
}
inline std::int64_t state_element_bytes(Dtype d) { return dtype_bits(d) / 8; }  // fp32 4, 16-bit 2, fp8 1

// fp32 training: Adam's m and v (8 in fp32), SGD's momentum (4). Mixed precision (16-bit, fp8
// and fp4 recipes): a master copy besides (Micikevicius et al. 2018 §3.1), 12 and 8 bytes in
// fp32, as the ZeRO paper counts them (Rajbhandari et al. 2020, §3.1). Each state in its
// `states` type (Adam only: the precision-aware optimizer is refused for SGD): with bf16
// moments 4 + 2 + 2 = 8. TE's store_param_remainders (a 16-bit remainder of the fp32 master
// beside the bf16 weights) is not modelled: its masters count 4 bytes.
inline std::int64_t optimizer_bytes_per_param(Dtype precision, Optimizer optimizer,
                                              const OptimizerStateDtypes& states = {}) {
  const std::int64_t moments =
      optimizer == Optimizer::adam ? state_element_bytes(states.exp_avg) + state_element_bytes(states.exp_avg_sq) : 4;
  switch (precision) {
    case Dtype::fp32:
    case Dtype::tf32: return moments;
    case Dtype::fp16:
    case Dtype::bf16:
    case Dtype::fp8:
    case Dtype::nvfp4:
    case Dtype::mxfp4: return moments + state_element_bytes(states.main_params);
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

// Bytes one parameter's update moves: Adam reads and writes the (master) weights and its two
// moments (24 in fp32, 16 with bf16 moments), SGD the weights and its momentum (12), both read
// the gradient. One home for the simulator's optimizer op (sim/training/step_graph.cpp) and
// calibrate's adamw/sgd points.
inline double optimizer_update_bytes_per_param(Optimizer optimizer, double grad_element_bytes,
                                               const OptimizerStateDtypes& states = {}) {
  if (optimizer != Optimizer::adam) return 12.0 + grad_element_bytes;
  const std::int64_t touched = state_element_bytes(states.main_params) + state_element_bytes(states.exp_avg) +
                               state_element_bytes(states.exp_avg_sq);
  return 2.0 * static_cast<double>(touched) + grad_element_bytes;  // each read and written once
}

// The same update as PyTorch's foreach AdamW runs it (torch/optim/adamw.py _multi_tensor_adamw,
// 2024), one pass a _foreach op over fp32 weights and moments: weight decay mul_ (read, write
// the weights: 8), lerp_ of the first moment to the gradient (8 + g), mul_ of the second (8),
// addcmul_ of the gradient squared into it (8 + g), sqrt into a new denominator (8), div_ and
// add_ of it (8 + 8), addcdiv_ of the weights (read them, the moment, the denominator; write:
// 16): 72 bytes and the gradient read twice.
inline double foreach_adamw_update_bytes_per_param(double grad_element_bytes) { return 72.0 + 2 * grad_element_bytes; }

}  // namespace twinsim
