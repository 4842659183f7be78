#include "sim/training/fsdp_copies.hpp"

#include "sim/memory/weights.hpp"
#include "sim/training/transfer_bytes.hpp"

namespace twinsim {

FsdpCopyBytes fsdp_copy_bytes(const Scenario& s, bool moe_layer) {
  const TrainingWorkload& t = *s.training;
  if (!s.stack.fsdp_copies || !s.plan.shards_params() || s.plan.dp_group_size() <= 1) return {};
  // the layer's parameters on this GPU before sharding (after TP and EP): what a gather fills
  const double params = static_cast<double>(trainable_layer_params(s.model, s.plan, t, moe_layer).total());
  const double gathered = param_element_bytes(dp_state_dtype(s.stack, t.precision));  // the gather's element
  const double grad = param_element_bytes(t.precision);  // autograd's gradient, the unsharded parameter's type
  const double reduced = grad_element_bytes(dp_gradient_dtype(s.stack, t.precision));  // reduce_dtype
  const double copy_out = 2 * gathered * params;         // split_with_sizes_copy: read, write
  const double copy_in = (grad + reduced) * params;      // _chunk_cat: read 16-bit, write reduce_dtype
  if (s.plan.pp > 1 && s.stack.fsdp_pp_keep_gathered) {  // once a step, over its micro-batches
    const double micro_batches = static_cast<double>(t.micro_batches(s.plan.dp));
    return {copy_out / micro_batches, copy_in / micro_batches};
  }
  return {copy_out, copy_out + copy_in};
}

}  // namespace twinsim
