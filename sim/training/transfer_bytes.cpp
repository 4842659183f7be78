#include "sim/training/transfer_bytes.hpp"

#include "sim/memory/activations.hpp"

namespace twinsim {

int grad_element_bytes(Dtype precision) { return precision == Dtype::fp32 ? 4 : 2; }

int param_element_bytes(Dtype precision) {
  return static_cast<int>(dtype_bytes(activation_dtype(precision), 1));
}

double pipeline_transfer_bytes(const ModelSpec& model, const Plan& plan, std::int64_t micro_batch,
                               std::int64_t seq_len, Dtype precision) {
  const std::int64_t tokens = micro_batch * seq_len / plan.cp;
  return static_cast<double>(tokens * model.hidden * dtype_bytes(activation_dtype(precision), 1) / plan.tp);
}

}  // namespace twinsim
