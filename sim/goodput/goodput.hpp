#pragma once
// Goodput: the fraction of a training run's wall-clock time that advances the model, once
// failures, checkpoints and restarts are paid (sim/goodput/README.md has the derivation).
// Failures arrive as a Poisson process (independent components); every unexpected one
// stops the synchronous job, which restarts from its newest durable checkpoint.
#include <cstdint>
#include <optional>

#include "hardware/reliability.hpp"
#include "scenario/scenario.hpp"
#include "sim/goodput/checkpoint.hpp"

namespace twinsim {

// Unexpected interruptions per hour of a job on `gpus` GPUs over `nodes` nodes: the sum over
// components of rate x units (a GPU's parts per GPU, a host's per node, software per job).
double interruptions_per_hour(const FailureRates& rates, std::int64_t gpus, std::int64_t nodes);

// The numbers the model runs on, in seconds (rates per second of wall-clock time).
struct GoodputInputs {
  double failure_rate_per_s = 0;  // unexpected interruptions: work since the checkpoint is lost
  double planned_rate_per_s = 0;  // planned ones: a checkpoint is taken first, nothing is lost
  double checkpoint_blocking_s = 0;  // the stall per checkpoint (delta)
  double checkpoint_write_s = 0;     // until it is durable (async: overlapping the steps)
  bool async_checkpoint = true;
  double restart_s = 0, read_s = 0, rewarm_s = 0;
  double interval_s = 0;  // compute between checkpoints; 0: Young/Daly's optimum
  double step_s = 0;      // the interval is a whole number of steps
};

struct GoodputPrediction {
  double mtbf_s = 0;            // 1 / the unexpected interruption rate (0: none)
  double interval_s = 0;        // compute between checkpoints, whole steps
  std::int64_t interval_steps = 0;
  bool interval_optimal = true;  // Young/Daly's (else the scenario's)
  double lost_work_s = 0;       // expected work redone per unexpected interruption
  double recovery_s = 0;        // restart + read + re-warm, per interruption
  // shares of wall-clock time; they sum to 1
  double ettr = 0;              // effective training time ratio: steps that stay done
  double checkpoint_share = 0, lost_work_share = 0, recovery_share = 0;
};

// Daly's higher-order optimum of the compute between checkpoints (Daly 2006, "A higher order
// estimate of the optimum checkpoint interval for restart dumps", FGCS 22(3), eq. 37), which
// starts from Young's sqrt(2 delta M) (Young 1974, CACM 17(9)): checkpoint cost delta, mean
// time between failures M; M itself once delta >= 2M.
double young_daly_interval_s(double checkpoint_s, double mtbf_s);

GoodputPrediction predict_goodput(const GoodputInputs& in);

// Days and dollars: `productive_s` of failure-free training (steps x step time) stretched by
// the goodput to wall-clock time.
struct TimeToTrain {
  bool finishes = true;     // false: failures come faster than the run recovers (ettr 0)
  double productive_s = 0;
  double wall_s = 0;        // productive_s / ettr
  double interruptions = 0;          // unexpected, expected over wall_s
  double planned_interruptions = 0;
  double gpu_hours = 0;     // over wall_s
  double failure_gpu_hours = 0;  // gpu_hours beyond the failure-free run's
  double cost = 0, failure_cost = 0;  // x price per GPU-hour
};
TimeToTrain time_to_train(const GoodputPrediction& g, const GoodputInputs& in, double productive_s,
                          std::int64_t gpus, double price_per_gpu_hour);

// A scenario's goodput (its `goodput:` section) at a simulated step time.
struct GoodputReport {
  std::string rates;  // the failure-rate set's name
  std::int64_t gpus = 0, nodes = 0;
  double interruptions_per_day = 0, planned_per_day = 0;
  double storage_write_Bps = 0, storage_read_Bps = 0;  // as priced (defaults resolved)
  CheckpointCost checkpoint;
  GoodputInputs inputs;
  GoodputPrediction prediction;
  std::optional<TimeToTrain> time;  // with goodput.train_tokens
  std::int64_t steps = 0;           // train_tokens / tokens per step
};
GoodputReport predict_goodput(const Scenario& s, const GoodputSpec& spec, double step_s);

}  // namespace twinsim
