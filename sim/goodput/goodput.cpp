#include "sim/goodput/goodput.hpp"

#include <algorithm>
#include <cmath>

#include "hardware/failure_rates.hpp"
#include "scenario/errors.hpp"

namespace twinsim {

double interruptions_per_hour(const FailureRates& rates, std::int64_t gpus, std::int64_t nodes) {
  double per_hour = 0;
  for (const ComponentFailureRate& c : rates.components) {
    const double units = c.scope == FailureScope::gpu ? static_cast<double>(gpus)
                         : c.scope == FailureScope::node ? static_cast<double>(nodes)
                                                         : 1.0;
    per_hour += c.per_hour * units;
  }
  return per_hour;
}

double young_daly_interval_s(double checkpoint_s, double mtbf_s) {
  if (mtbf_s <= 0) return 0;
  if (checkpoint_s >= 2 * mtbf_s) return mtbf_s;  // Daly 2006 eq. 37, second branch
  const double x = checkpoint_s / (2 * mtbf_s);
  return std::sqrt(2 * checkpoint_s * mtbf_s) * (1 + std::sqrt(x) / 3 + x / 9) - checkpoint_s;
}

namespace {

// The compute between checkpoints: the scenario's, else Daly's optimum; never shorter than
// the write when asynchronous (a checkpoint does not start before the last is on storage),
// and a whole number of steps (a checkpoint lands between steps).
double checkpoint_interval(const GoodputInputs& in, double mtbf_s, bool& optimal) {
  optimal = in.interval_s <= 0;
  if (!optimal) return in.interval_s;
  double tau = mtbf_s > 0 ? young_daly_interval_s(in.checkpoint_blocking_s, mtbf_s) : 0;
  if (in.async_checkpoint) tau = std::max(tau, in.checkpoint_write_s);
  return tau;
}

}  // namespace

GoodputPrediction predict_goodput(const GoodputInputs& in) {
  GoodputPrediction g;
  g.mtbf_s = in.failure_rate_per_s > 0 ? 1.0 / in.failure_rate_per_s : 0;
  const double tau = checkpoint_interval(in, g.mtbf_s, g.interval_optimal);
  g.interval_steps = in.step_s > 0 ? std::max<std::int64_t>(1, std::llround(tau / in.step_s)) : 0;
  g.interval_s = in.step_s > 0 ? static_cast<double>(g.interval_steps) * in.step_s : tau;
  if (g.mtbf_s <= 0 && g.interval_optimal) {  // nothing fails: no checkpoint is worth its stall
    g.interval_steps = 0, g.interval_s = 0;
    g.recovery_s = in.restart_s + in.read_s + in.rewarm_s;
    g.recovery_share = std::min(1.0, in.planned_rate_per_s * g.recovery_s);
    g.ettr = 1 - g.recovery_share;
    return g;
  }
  const double segment = g.interval_s + in.checkpoint_blocking_s;  // wall time per checkpoint
  // a failure strikes, on average, halfway through a segment; an asynchronous checkpoint is
  // durable only once written, so until then a failure falls back one checkpoint further
  g.lost_work_s = segment / 2 + (in.async_checkpoint ? in.checkpoint_write_s : 0);
  g.recovery_s = in.restart_s + in.read_s + in.rewarm_s;
  // first order in the rates (Young 1974; Daly 2006 §3): each unexpected interruption costs
  // the lost work and a recovery, each planned one a recovery; the rest of the wall time runs
  // segments, of which interval / segment is training
  g.lost_work_share = in.failure_rate_per_s * g.lost_work_s;
  g.recovery_share = (in.failure_rate_per_s + in.planned_rate_per_s) * g.recovery_s;
  const double running = std::max(0.0, 1 - g.lost_work_share - g.recovery_share);
  if (running == 0) {  // the shares are first order: past 1 the run never finishes
    const double total = g.lost_work_share + g.recovery_share;
    g.lost_work_share /= total, g.recovery_share /= total;
  }
  g.ettr = running * g.interval_s / segment;
  g.checkpoint_share = running * in.checkpoint_blocking_s / segment;
  return g;
}

TimeToTrain time_to_train(const GoodputPrediction& g, const GoodputInputs& in, double productive_s,
                          std::int64_t gpus, double price_per_gpu_hour) {
  TimeToTrain t;
  t.productive_s = productive_s;
  t.finishes = g.ettr > 0;
  if (!t.finishes) return t;
  t.wall_s = productive_s / g.ettr;
  t.interruptions = in.failure_rate_per_s * t.wall_s;
  t.planned_interruptions = in.planned_rate_per_s * t.wall_s;
  t.gpu_hours = t.wall_s / 3600.0 * static_cast<double>(gpus);
  t.failure_gpu_hours = (t.wall_s - productive_s) / 3600.0 * static_cast<double>(gpus);
  t.cost = t.gpu_hours * price_per_gpu_hour;
  t.failure_cost = t.failure_gpu_hours * price_per_gpu_hour;
  return t;
}

GoodputReport predict_goodput(const Scenario& s, const GoodputSpec& given, double step_s) {
  if (!s.training) throw ScenarioError("goodput", "", "prices a training run; this scenario is an inference batch");
  GoodputReport r;
  r.rates = given.failures.name;
  r.gpus = s.plan.world_size();
  GoodputSpec spec = given;  // storage left at 0: Llama 3's per GPU (hardware/failure_rates.hpp)
  const double default_storage = default_storage_Bps_per_gpu() * static_cast<double>(r.gpus);
  if (spec.storage_write_Bps <= 0) spec.storage_write_Bps = default_storage;
  if (spec.storage_read_Bps <= 0) spec.storage_read_Bps = default_storage;
  r.storage_write_Bps = spec.storage_write_Bps, r.storage_read_Bps = spec.storage_read_Bps;
  r.nodes = (r.gpus + s.cluster.gpus_per_node - 1) / s.cluster.gpus_per_node;
  const double per_hour = interruptions_per_hour(spec.failures, r.gpus, r.nodes);
  r.interruptions_per_day = per_hour * 24;
  r.planned_per_day = spec.failures.planned_per_hour * 24;
  r.checkpoint = checkpoint_cost(s, spec);
  GoodputInputs& in = r.inputs;
  in.failure_rate_per_s = per_hour / 3600.0;
  in.planned_rate_per_s = spec.failures.planned_per_hour / 3600.0;
  in.checkpoint_blocking_s = r.checkpoint.blocking_s;
  in.checkpoint_write_s = r.checkpoint.write_s;
  in.async_checkpoint = spec.async_checkpoint;
  in.restart_s = spec.restart_s, in.read_s = r.checkpoint.read_s, in.rewarm_s = spec.rewarm_s;
  in.interval_s = spec.checkpoint_interval_s;
  in.step_s = step_s;
  if (spec.async_checkpoint && in.interval_s > 0 && in.interval_s < in.checkpoint_write_s)
    throw ScenarioError("goodput.checkpoint_interval_minutes", std::to_string(in.interval_s / 60),
                        "is shorter than writing one asynchronous checkpoint (" +
                            std::to_string(in.checkpoint_write_s / 60) + " min): checkpoints would queue");
  r.prediction = predict_goodput(in);
  if (spec.train_tokens > 0) {
    const double tokens_per_step = static_cast<double>(s.training->global_batch * s.training->seq_len);
    r.steps = static_cast<std::int64_t>(std::ceil(spec.train_tokens / tokens_per_step));
    r.time = time_to_train(r.prediction, in, static_cast<double>(r.steps) * step_s, r.gpus, spec.price_per_gpu_hour);
  }
  return r;
}

}  // namespace twinsim
