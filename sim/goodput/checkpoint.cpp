#include "sim/goodput/checkpoint.hpp"

#include "models/param_count.hpp"
#include "scenario/errors.hpp"
#include "sim/memory/weights.hpp"

namespace twinsim {

double checkpoint_bytes(const Scenario& s) {
  // the type the stack keeps its model in (fp32 for an eager fp32 stack), as the memory model
  const Dtype model_dtype = dp_state_dtype(s.stack, s.training->precision);
  const BytesPerParam per_param =
      training_bytes_per_param(model_dtype, s.training->optimizer, optimizer_state_dtypes(s.plan));
  return static_cast<double>(count_params(s.model).total) * static_cast<double>(per_param.params + per_param.optimizer);
}

CheckpointCost checkpoint_cost(const Scenario& s, const GoodputSpec& spec) {
  CheckpointCost c;
  c.bytes = checkpoint_bytes(s);
  c.shard_bytes = c.bytes / static_cast<double>(s.plan.world_size());
  c.write_s = c.bytes / spec.storage_write_Bps;
  c.read_s = c.bytes / spec.storage_read_Bps;
  if (!spec.async_checkpoint) {
    c.blocking_s = c.write_s;
    return c;
  }
  if (s.cluster.host.d2h_Bps <= 0)
    throw ScenarioError("goodput.async_checkpoint", "true",
                        "needs the node's GPU-to-host bandwidth (cluster.host.d2h_GBps) to price the snapshot");
  c.blocking_s = c.shard_bytes / s.cluster.host.d2h_Bps;
  return c;
}

}  // namespace twinsim
