#include "sim/training/step_size.hpp"

#include "sim/training/step_ranks.hpp"

namespace twinsim {

StepSize estimate_step_size(const Scenario& s, Fidelity fidelity) {
  const Plan& p = s.plan;
  const double gpus = fidelity == Fidelity::fast ? static_cast<double>(p.pp)
                      : fidelity == Fidelity::full_per_rank ? static_cast<double>(p.world_size())
                                                            : static_cast<double>(p.pp) * p.tp * p.cp *
                                                                  static_cast<double>(replica_fold(s, fidelity).simulated.size());
  const double micro_batches = static_cast<double>(s.training->micro_batches(p.dp));
  const double layers_per_stage = static_cast<double>(s.model.layers) / p.pp;
  constexpr double kTasksPerSlot = 10, kBytesPerTask = 160;
  // forward, backward and their collectives; ZeRO-3's gathers and reduce; the recompute
  const double per_layer = 6 + (p.shards_params() ? 2 : 0) + (p.recompute != Recompute::none ? 2 : 0);
  StepSize size;
  size.tasks = gpus * micro_batches * (layers_per_stage * per_layer + kTasksPerSlot);
  size.bytes = size.tasks * kBytesPerTask;
  return size;
}

}  // namespace twinsim
